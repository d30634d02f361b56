"""The restore journal of one Open WebUI server: the setting values an ingest changed, kept on disk until they are
back, so that the next ingest against that server can put back what a killed one left — and the run holding the
server's settings, so that a second ingest refuses while the first is alive rather than restore its live values.

It holds the servers' original values, and one may carry a credential (`TEXT_SPLITTER` pointing at
`http://user:password@tika`): restoring needs it as it was, so the file is its owner's alone (mode 0600).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.datasets.numpy_docs import cache_root

PRIVATE = 0o600  # the owner reads and writes; nobody else


def journal_path(base_url: str) -> Path:
    return cache_root() / "restore" / f"openwebui-{hashlib.sha256(base_url.encode()).hexdigest()[:16]}.json"


def _alive(pid: int) -> bool:
    """Whether another process with this id runs (this process's own journal is a leftover of an earlier run)."""
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


@dataclass(frozen=True)
class LeftOver:
    """A journal found on disk: the process that wrote it and the values it saved."""

    pid: int
    saved: dict[str, object]


class RestoreJournal:
    def __init__(self, base_url: str):
        self.server = base_url
        self.path = journal_path(base_url)
        self.held = False  # this run wrote it: only then is it this run's to remove

    def read(self) -> LeftOver | None:
        """The journal on disk (None: there is none); one held by a live ingest is refused with one line."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            left = LeftOver(int(data.get("pid", 0)), data["saved"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            left = None
        if left is None or not isinstance(left.saved, dict):
            raise UserError(f"restore journal {self.path}: unreadable; check the server's settings, then delete it")
        if _alive(left.pid):
            raise UserError(
                f"another ragbench ingest (pid {left.pid}) is changing the settings of {self.server}: wait until it "
                f"ends (its restore journal: {self.path}; delete it only if no such ingest runs)"
            )
        self.held = True  # a dead run's: this run puts its values back and removes it
        return left

    def claim(self) -> None:
        """Journal this run before any change (nothing saved yet); one claimed by another run since `read` is
        refused as `read` refuses it."""
        try:
            self._write({}, os.O_CREAT | os.O_EXCL)
            self.held = True
        except FileExistsError:
            self.read()
            raise UserError(f"restore journal {self.path}: written by another ingest just now; try again") from None

    def write(self, saved: dict[str, object]) -> None:
        """Replace the journal with `saved`, whole (written aside, then moved in place)."""
        partial = self.path.with_suffix(".partial")
        partial.unlink(missing_ok=True)  # created afresh, so its mode is ours
        self._write(saved, os.O_CREAT | os.O_EXCL, partial)
        partial.replace(self.path)
        self.held = True

    def remove(self) -> None:
        """Delete the journal this run wrote, or the left-over one `read` returned (its values are back)."""
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False

    def _write(self, saved: dict[str, object], flags: int, path: Path | None = None) -> None:
        target = path or self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"server": self.server, "pid": os.getpid(), "saved": saved})
        with os.fdopen(os.open(target, os.O_WRONLY | flags, PRIVATE), "w", encoding="utf-8") as file:
            file.write(text)
