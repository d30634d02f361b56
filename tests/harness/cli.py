"""Run `ragbench` and capture its output: in-process (faster than a subprocess; keeps monkeypatched state), or as
a child process where a test needs a process of its own (its environment, its exit, no state shared)."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paths import REPO

CliResult = tuple[int, str, str]  # exit code, stdout, stderr


def exit_code(patch: pytest.MonkeyPatch, *args: str) -> int:
    """Run `ragbench ARGS` in this process (sys.argv set through `patch`); the exit code a process would have."""
    from bench.cli import main

    patch.setattr(sys, "argv", ["ragbench", *args])
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # main() takes them over
    try:
        main()
    except SystemExit as exc:
        # Python's own rule: None is success, a message is exit status 1.
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    return 0


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliResult:
    """(exit code, stdout, stderr) of `ragbench ARGS`."""
    code = exit_code(monkeypatch, *args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_cli_captured(*args: str) -> CliResult:
    """run_cli where no test fixtures are at hand (inside hypothesis examples)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = exit_code(patch, *args)
    return code, stdout.getvalue(), stderr.getvalue()


def cli_runner(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *command: str
) -> Callable[..., CliResult]:
    """`run(*args)`: run_cli of `ragbench COMMAND... ARGS`, each argument as str() writes it (paths included)."""
    return lambda *args: run_cli([*command, *map(str, args)], monkeypatch, capsys)


def run_cli_process(
    args: list[str], env: dict[str, str] | None = None, timeout: float | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    """`python -m bench ARGS` as a child process in `cwd`, with `env` added to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def ragbench(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Fixture: `ragbench(*args)` is run_cli of `ragbench ARGS`, outside a CI job (no GitHub step summary)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return cli_runner(monkeypatch, capsys)
