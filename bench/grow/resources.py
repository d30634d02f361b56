"""The app's resources at each rung, where this host can read them: the resident memory of the app's process and
its children (`pid=`, or the process listening on the target's loopback port), and the bytes its store takes on
disk (`data_dir=`: the files under that folder, as allocated). Both parameters are grow's own: they are taken off
the target's spec before the target is built."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from bench.core.errors import UserError
from bench.targets.base import TargetSpec

PROC = Path("/proc")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Resources:
    pid: int | None  # the app's process (its children counted with it); None: not on this host, or not found
    data_dir: Path | None  # the app's store on disk; None: not given


def split_resources(spec: TargetSpec) -> tuple[TargetSpec, Resources]:
    """The spec without `pid=` and `data_dir=` (its name kept), and what they name; one line for a bad value."""
    params = dict(spec.params)
    pid_text, folder = params.pop("pid", None), params.pop("data_dir", None)
    if pid_text is not None and not (pid_text.isdigit() and (PROC / pid_text).is_dir()):
        raise UserError(f"--target {spec.public_text!r}: pid={pid_text} is no running process on this host")
    # A fresh app makes its store's folder at its first write (Open WebUI's vector store at the first embedding): a
    # missing folder whose parent is there is read once it appears (0 bytes until then).
    if folder is not None and not (
        Path(folder).is_dir() or (not Path(folder).exists() and Path(folder).parent.is_dir())
    ):
        raise UserError(
            f"--target {spec.public_text!r}: data_dir={folder} is not a folder (nor one the app could still make)"
        )
    pid = int(pid_text) if pid_text is not None else listening_pid(spec.url)
    if params != spec.params:
        spec = replace(spec, params=params, given_name=spec.name)
    return spec, Resources(pid, Path(folder) if folder is not None else None)


def listening_pid(url: str | None) -> int | None:
    """The process listening on a loopback URL's port (/proc/net/tcp{,6} and each process's sockets)."""
    parts = urlsplit(url or "")
    if parts.hostname not in LOOPBACK:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    return _owner(inodes) if inodes else None


def _owner(inodes: set[str]) -> int | None:
    for fd_dir in PROC.glob("[0-9]*/fd"):
        try:
            if any(str(fd.readlink()) in inodes for fd in fd_dir.iterdir()):
                return int(fd_dir.parent.name)
        except OSError:
            continue
    return None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of the process and its descendants; None: the process is gone."""
    parents: dict[int, int] = {}
    resident: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(stat.parent.name)
        parents[child], resident[child] = int(fields[1]), int(fields[21]) * page
    if pid not in resident:
        return None
    tree, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree, grew = tree | more, bool(more)
    return sum(resident[p] for p in tree)


def disk_bytes(folder: Path) -> int:
    """Bytes allocated to the files under the folder (st_blocks: a sparse file counts what it holds)."""
    total = 0
    if not folder.is_dir():  # not made yet (a fresh app's store): nothing on disk
        return 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_blocks * 512
        except OSError:
            continue
    return total


def measure(resources: Resources) -> tuple[int | None, int | None]:
    """(RSS bytes, store bytes) now; None where unknown."""
    rss = rss_bytes(resources.pid) if resources.pid is not None else None
    disk = disk_bytes(resources.data_dir) if resources.data_dir is not None else None
    return rss, disk
