"""Run `ragbench` in-process (faster than a subprocess; keeps monkeypatched state) and capture its output."""

from __future__ import annotations

import signal
import sys


def run_cli(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
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
