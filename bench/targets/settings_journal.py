"""The one restore journal of a server's settings, for every command that changes them (`ingest`'s sweep, an Open
WebUI target's search mode in `grow`, `quality`, `load`, ...): the values to put back, on disk before the first
change and until they are back, so that a run killed outright (SIGKILL, power) leaves them for the next run
against that server, which puts them back FIRST — before it reads the values it will itself put back, which are
then the server's true originals and not the killed run's live ones.

One journal per server, not per spelling: it is keyed by the server's identity — the app, its resolved address
(any address of this machine is one: `localhost`, `127.0.0.1`, `::1` and the host's own name reach the same
server) and its port — so two runs through two spellings share one journal and the second refuses while the first
lives (the pid in the journal, bench/core/pidlock.py). In one process every user of a server (two modes of one
Open WebUI in a grow run) shares one journal: the first value saved of each setting is the original, and the
journal goes when the last user has put its values back.

It holds the server's original values, and one may carry a credential (a reranker key, `TEXT_SPLITTER` pointing
at `http://user:password@tika`): restoring needs it as it was, so the file is its owner's alone (mode 0600).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import os
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench.core.errors import UserError
from bench.core.pidlock import PRIVATE, alive
from bench.datasets.numpy_docs import cache_root
from bench.results.schema.ingest import Settings, SettingValue

Send = Callable[[Settings], None]  # puts values back on the server
_SCALARS = (bool, int, float, str)  # a SettingValue's types besides None


def server_identity(base_url: str) -> str:
    """`ADDRESS:PORT/PATH` of the server a URL reaches: `local` for any address of this machine, else the first of
    its name's addresses (the name itself where it does not resolve)."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:  # a port out of range: the URL's own spelling, which the client refuses anyway
        port = 0
    return f"{_address(host)}:{port}{parts.path.rstrip('/')}"


@functools.lru_cache(maxsize=64)
def _address(host: str) -> str:
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return host
    addresses = sorted({str(info[4][0]) for info in found})
    if any(_on_this_machine(a) for a in addresses):
        return "local"
    return addresses[0] if addresses else host


def _on_this_machine(address: str) -> bool:
    """Loopback, or an address a socket here can bind (one of this machine's interfaces)."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    try:
        with socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class LeftOver:
    """A journal found on disk: the process that wrote it and the values it saved."""

    pid: int
    saved: Settings


class SettingsJournal:
    """One server's journal in this process: `open` by each user (a dead run's values put back first), `save` before
    each change, `close` once the user's values are back (or could not be: then the file stays)."""

    def __init__(self, app: str, base_url: str):
        self.server = base_url
        self.identity = f"{app}@{server_identity(base_url)}"
        digest = hashlib.sha256(self.identity.encode()).hexdigest()[:16]
        self.path = cache_root() / "restore" / f"{app}-{digest}.json"
        self.saved: Settings = {}  # setting -> the server's original value (the first saved wins)
        self._users = 0
        self._mine = False  # this process wrote the file: only then is it this process's to remove
        self._keep = False  # a user could not put its values back: the file stays for the next run

    def open(self, send: Send) -> Settings:
        """A user starts: the first in this process puts back what a dead run left (the values, returned; {} when
        none) and refuses one a live run holds; later users share what is open."""
        with _LOCK:
            left = {} if self._users else self._put_back(send)
            self._users += 1
            _OPEN.setdefault(self.path, self)
            return left

    def claim(self) -> None:
        """Journal this process before any change (nothing saved yet): a second run refuses from now on."""
        with _LOCK:
            self._write()

    def save(self, values: Mapping[str, SettingValue]) -> None:
        """The values about to change, as the server has them: those not saved yet join the journal on disk."""
        with _LOCK:
            fresh = {k: v for k, v in values.items() if k not in self.saved}
            if fresh or not self._mine:
                self.saved.update(fresh)
                self._write()

    def close(self, restored: bool) -> None:
        """A user ends; `restored`: its values are back. The last user removes the file unless one could not."""
        with _LOCK:
            self._users = max(0, self._users - 1)
            self._keep |= not restored
            if self._users:
                return
            if self._mine and not self._keep:
                self.path.unlink(missing_ok=True)
            self.saved, self._mine, self._keep = {}, False, False
            _OPEN.pop(self.path, None)

    def read(self) -> LeftOver | None:
        """The journal on disk (None: there is none); one held by a live run is refused with one line."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            left = LeftOver(int(data.get("pid", 0)), as_settings(data["saved"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            left = None
        if left is None:
            raise UserError(f"restore journal {self.path}: unreadable; check the server's settings, then delete it")
        if alive(left.pid):
            raise UserError(
                f"another ragbench run (pid {left.pid}) is changing the settings of {self.server}: wait until it "
                f"ends (its restore journal: {self.path}; delete it only if no such run is running)"
            )
        return left

    def _put_back(self, send: Send) -> Settings:
        left = self.read()
        if left is None:
            return {}
        if left.saved:
            send(left.saved)  # a server that refuses raises here: the journal stays for the next run
        self.path.unlink(missing_ok=True)
        return left.saved

    def _write(self) -> None:
        """The journal whole: created exclusively the first time (a second run's file is refused as `read` refuses
        it), then replaced whole (written aside, moved in place)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"server": self.server, "identity": self.identity, "pid": os.getpid(), "saved": self.saved})
        if not self._mine:
            try:
                _create(self.path, text)
            except FileExistsError:
                self.read()  # a live run's: refused
                raise UserError(f"restore journal {self.path}: written by another run just now; try again") from None
            self._mine = True
            return
        partial = self.path.with_suffix(".partial")
        partial.unlink(missing_ok=True)  # created afresh, so its mode is ours
        _create(partial, text)
        partial.replace(self.path)


def as_settings(values: object) -> Settings:
    """A JSON object of settings (a journal's `saved`, a server's values) as settings: ValueError where a value is
    not a scalar, which no setting ragbench changes is."""
    if not isinstance(values, dict) or not all(v is None or isinstance(v, _SCALARS) for v in values.values()):
        raise ValueError("not an object of scalar settings")
    return {str(k): v for k, v in values.items()}


def _create(path: Path, text: str) -> None:
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE), "w", encoding="utf-8") as file:
        file.write(text)


_LOCK = threading.RLock()
_OPEN: dict[Path, SettingsJournal] = {}  # this process's journals by file: one per server


def journal_for(app: str, base_url: str) -> SettingsJournal:
    """This process's journal of the server `base_url` reaches (the same object for every spelling of it)."""
    fresh = SettingsJournal(app, base_url)
    with _LOCK:
        return _OPEN.setdefault(fresh.path, fresh)
