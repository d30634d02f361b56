"""A file that names the process holding something (a server's settings, an output folder): the one way ragbench
tells a live run from a dead one's leftovers — the pid written in the file, checked with signal 0.

A run killed outright (SIGKILL, power) cannot remove its file: the next run finds a pid that no longer runs and
takes over; a pid that still runs is another ragbench at work, and the next run refuses with one line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.core.errors import UserError

PRIVATE = 0o600  # the owner reads and writes; nobody else


def alive(pid: int) -> bool:
    """Whether another process with this id runs (this process's own id is a leftover of an earlier run in it)."""
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _holder(path: Path) -> int:
    """The pid in a lock file (0: none there, or not a pid)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return 0
    return int(text) if text.isascii() and text.isdigit() else 0


def _create(path: Path) -> bool:
    """Create `path` holding this process's pid, whole from its first instant (written aside, then linked in: a
    reader never sees it empty); False: it exists."""
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    aside.unlink(missing_ok=True)
    with os.fdopen(os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE), "w", encoding="utf-8") as file:
        file.write(str(os.getpid()))
    try:
        os.link(aside, path)
    except FileExistsError:
        return False
    finally:
        aside.unlink(missing_ok=True)
    return True


@contextmanager
def pid_lock(path: Path, what: str) -> Iterator[None]:
    """Hold `path` for the block: created with this process's pid, removed at the end; one a live process holds is
    refused with one line naming `what`; a dead process's is taken over."""
    for _ in range(3):  # a dead holder's file removed, then another run may take it first
        if _create(path):
            break
        pid = _holder(path)
        if alive(pid):
            raise UserError(
                f"{what}: another ragbench run (pid {pid}) is using it; wait until it ends (its lock: {path}; "
                "delete it only if no such run is running)"
            )
        path.unlink(missing_ok=True)
    else:
        raise UserError(f"{what}: its lock {path} is taken and released by other runs again and again; try again")
    try:
        yield
    finally:
        if _holder(path) == os.getpid():
            path.unlink(missing_ok=True)
