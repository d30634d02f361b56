"""Run `ragbench` and capture its output: in-process (faster than a subprocess; keeps monkeypatched state), or as
a child process where a test needs a process of its own (its environment, its exit, no state shared)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.paths import REPO

CliResult = tuple[int, str, str]  # exit code, stdout, stderr


def run_cli(args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> CliResult:
    """(exit code, stdout, stderr) of `ragbench ARGS`."""
    from bench.cli import main

    monkeypatch.setattr(sys, "argv", ["ragbench", *args])
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # main() takes them over
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


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
