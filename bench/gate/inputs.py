"""The results files `compare` reads: found under a path given, and whether two paths are one file.

A folder holding `results.jsonl` is one results file; any other folder is searched for `*/results.jsonl`
(what `ragbench run` writes), each keyed by its folder inside the path (compare pairs files by that key).
"""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import InputError
from bench.results.outdir import RESULTS_FILE


def locate_results(path: Path) -> dict[str, Path]:
    """Results files under `path`, keyed by their folder relative to `path` ("" for `path` itself)."""
    if path.is_file():
        return {"": path}
    if not path.is_dir():
        raise InputError(path, "no such results file or folder")
    if (path / RESULTS_FILE).is_file():
        return {"": path / RESULTS_FILE}
    found = sorted(path.rglob(RESULTS_FILE))
    if not found:
        raise InputError(path, f"no {RESULTS_FILE} in this folder or below it")
    return {f.parent.relative_to(path).as_posix(): f for f in found}


def same_file(a: Path, b: Path) -> bool:
    """The same file by path (links resolved), or by inode (a hard link)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:  # an unreadable path is no proof of sameness; writing it fails with its own line
        return False
