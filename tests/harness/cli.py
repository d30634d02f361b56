"""Run `ragbench` and capture its output: in-process (faster than a subprocess; keeps monkeypatched state), or as
a child process where a test needs a process of its own (its environment, its exit, no state shared)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import time
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


STOPPED_S = 120  # a signalled run's stop on a busy 2-core runner: its records, report and workers' exit


def signal_when_printed(
    argv: list[str], printed: re.Pattern[str], wait_s: float, signum: int, after_s: float = 0.0
) -> CliResult:
    """`argv` as a child process in REPO (PYTHONPATH REPO), sent `signum` `after_s` after a line of its stdout
    matched `printed`; (exit code, its stdout, stderr) once it ended. No such line within `wait_s` (or the process
    ended first) fails the test with what it printed; a process still alive at the end is killed."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=pipe, stderr=pipe, encoding="utf-8")
    seen: list[str] = []
    deadline = time.monotonic() + wait_s
    try:
        assert proc.stdout is not None
        while time.monotonic() < deadline:  # readline blocks: the deadline is checked between lines
            seen.append(proc.stdout.readline())
            if not seen[-1] or printed.search(seen[-1]):
                break
        assert seen and printed.search(seen[-1]), "".join(seen)
        time.sleep(after_s)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=STOPPED_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(seen) + stdout, stderr


@pytest.fixture
def ragbench(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Fixture: `ragbench(*args)` is run_cli of `ragbench ARGS`, outside a CI job (no GitHub step summary)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return cli_runner(monkeypatch, capsys)
