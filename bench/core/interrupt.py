"""Ctrl-C and SIGTERM: one way to stop, and sections that a stop cannot cut in half.

Both signals raise `Interrupted` (a KeyboardInterrupt, so every `finally` and `except KeyboardInterrupt`
path behaves as for Ctrl-C) in the main thread. Inside `uninterruptible()` a signal is held and raised
when the section ends, so what the section writes (a batch of result records, the renaming of report
files, restoring a server's settings) is either all there or not started. The exit status after a stop
is 128 + the first signal's number (130 for Ctrl-C, 143 for SIGTERM), never 0.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_first: int | None = None  # the first stop signal this process received
_held: int | None = None  # a signal that arrived inside an uninterruptible section
_depth = 0  # nesting of uninterruptible sections


def exit_status() -> int | None:
    """128 + the first signal's number, or None when no stop signal came."""
    return None if _first is None else 128 + _first


def signal_name() -> str:
    return signal.Signals(_first).name if _first is not None else ""


def exit_at_once_on_signal() -> None:
    """For the last instants of the process (its work is done and on disk): a signal now ends it at once
    with 128 + the first signal's number, instead of being lost in the interpreter's shutdown."""

    def handler(signum: int, _frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with suppress(OSError, ValueError):
                stream.flush()
        os._exit(128 + (_first or signum))

    for signum in SIGNALS:
        signal.signal(signum, handler)


def _handler(signum: int, _frame: object) -> None:
    global _first, _held
    if _first is None:
        _first = signum
    if _depth:
        _held = _held or signum
        return
    raise Interrupted(signum)


def install() -> None:
    """Route SIGINT and SIGTERM to `Interrupted` for the rest of the process (main thread only)."""
    global _first, _held
    _first = _held = None
    for signum in SIGNALS:
        signal.signal(signum, _handler)


@contextmanager
def uninterruptible() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while the block runs; a held signal is raised as `Interrupted` when it ends.

    Works whether or not `install()` ran (the library is also used without the CLI). Only the main
    thread receives signals, so in another thread this is a plain block.
    """
    global _depth, _held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    if _depth == 0:
        previous = {signum: signal.signal(signum, _handler) for signum in SIGNALS}
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            held, _held = _held, None
            if held is not None:
                raise Interrupted(held)
