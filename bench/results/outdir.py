"""The output folder of a run (`--out`): which files ragbench writes there.

A new run never mixes with an earlier one: a folder that holds ragbench's files is refused unless the
user asks to overwrite, and overwriting removes only those files (anything else in the folder stays).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from bench.core.errors import UserError
from bench.core.interrupt import uninterruptible
from bench.results.schema import DOCTOR_DOCUMENT, IDENTITY_DOCUMENT

RESULTS_FILE = "results.jsonl"
QRELS_FILE = "qrels.trec"  # the judgments the run was scored with: `ragbench evaluate` reproduces every figure
REPORT_FILES = ("report.md", "report.html", "per_query.csv")
REPLAY_FILE = "trace-replay.json"  # `load --trace`'s summary (bench/commands/load_trace.py)
SIZE_FILE = "trace-size.json"  # `size --trace`'s summary (bench/commands/size_trace.py)
# A trace's files: its summaries, and its report beside a results file (bench/report/trace.py).
TRACE_FILES = (REPLAY_FILE, SIZE_FILE, "trace-report.md", "trace-report.html")
PLOTS_DIR = "plots"
PLOT_PATTERNS = (
    "metrics.png",
    "differences_*.png",
    "load_*.png",
    "size_*.png",
    "ceiling.png",
    "identity_*.png",
    "ingest_*.png",
    "grow_*.png",
)


def safe_filename(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name).strip("_") or "target"


def run_file(name: str) -> str:
    """A target's run file, relative to the results file."""
    return f"runs/{safe_filename(name)}.trec"


def checkpoint_file(run_file: str) -> str:
    """The finished queries of an unfinished target (bench/quality/checkpoint.py), beside its run file."""
    return run_file.removesuffix(".trec") + ".partial.jsonl"


def _earlier_targets(out: Path) -> list[str]:
    from bench.results.store import read_results

    try:
        return read_results(out / RESULTS_FILE).header.targets
    except UserError:  # no results file, or one too damaged to name its targets
        return []


def ragbench_files(out: Path, names: list[str]) -> list[Path]:
    """Files in `out` that a ragbench run wrote or would write for targets `names`."""
    candidates = [out / RESULTS_FILE, out / QRELS_FILE, *(out / f for f in (*REPORT_FILES, *TRACE_FILES))]
    for name in dict.fromkeys([*_earlier_targets(out), *names]):
        candidates += [out / run_file(name), out / checkpoint_file(run_file(name))]
    found = [p for p in candidates if p.exists() or p.is_symlink()]
    for pattern in PLOT_PATTERNS:
        found += sorted((out / PLOTS_DIR).glob(pattern))
    return found


def check_out_dir(out: Path, names: list[str], overwrite: bool) -> list[Path]:
    """Refuse (one line, exit 2) an `out` that cannot take a new run of targets `names` without losing
    something; return ragbench's files there, which the new run replaces. Touches nothing."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: is a file, not a folder")
    ours = ragbench_files(out, names) if out.is_dir() else []
    if ours and not overwrite:
        raise UserError(
            f"--out {out}: holds an earlier run ({ours[0].relative_to(out)}); "
            "give --overwrite to replace it, or another --out"
        )
    for path in ours:
        if path.is_dir() and not path.is_symlink():
            raise UserError(f"--out {out}: {path.relative_to(out)} is a folder where ragbench writes a file")
    return ours


def prepare_out_dir(out: Path, names: list[str], overwrite: bool) -> None:
    """Make `out` ready for a new run of targets `names`, or refuse with one line (exit 2)."""
    ours = check_out_dir(out, names, overwrite)
    try:
        with uninterruptible():  # the results file goes last: until then it names the earlier run's files
            for path in sorted(ours, key=lambda p: p.name == RESULTS_FILE):
                path.unlink()
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out}: {exc.strerror or exc}: {exc.filename or out}") from None


def is_document(out: Path) -> bool:
    """`--out FILE.json`: identity's and doctor's single JSON document."""
    return out.suffix == ".json"


def check_out_document(out: Path, overwrite: bool) -> None:
    """An existing FILE.json is replaced only with --overwrite, and only when ragbench wrote it (its
    `schema` says so): a user's own JSON file is never replaced."""
    check_out_file(out, "--out", overwrite, _is_document, f"no {IDENTITY_DOCUMENT} or {DOCTOR_DOCUMENT} schema")


def _is_document(out: Path) -> bool:
    try:
        schema = json.loads(out.read_text(encoding="utf-8")).get("schema")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):  # unreadable, not JSON, not an object
        return False
    return schema in (IDENTITY_DOCUMENT, DOCTOR_DOCUMENT)


def check_out_file(
    path: Path, flag: str, overwrite: bool, ours: Callable[[Path], bool], unlike: str, appended: bool = False
) -> None:
    """The one rule for a file a command writes (`flag PATH`): an existing file is replaced only with
    --overwrite, and only when ragbench wrote it (`ours` recognises it; `unlike`: why a file is not, said);
    a file written by appending (`appended`) takes more only where ragbench wrote what it holds. A user's
    own file is never replaced or added to. Touches nothing."""
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a folder, not a file")
    if not path.exists() and not path.is_symlink():
        return
    if not ours(path):  # said first: --overwrite would not help
        done = f"{flag} adds only to" if appended else "--overwrite replaces only"
        raise UserError(
            f"{flag} {path}: not a file ragbench wrote ({unlike}); {done} ragbench's own files: give another {flag}"
        )
    if not appended and not overwrite:
        raise UserError(f"{flag} {path}: exists; give --overwrite to replace it, or another {flag}")


def check_record_file(
    path: Path, flag: str, overwrite: bool, is_trace: Callable[[Path], bool], out: Path | None = None
) -> None:
    """`--record FILE` (a trace, written as the run goes): by the one rule above, before any work — a file that
    is no trace ragbench wrote (a dataset's corpus.jsonl, an earlier results.jsonl) is never truncated, an
    earlier trace only with --overwrite; nor may it be a file the run writes into its folder `out`."""
    if (
        out is not None
        and path.parent.resolve() == out.resolve()
        and path.name in (RESULTS_FILE, QRELS_FILE, *REPORT_FILES, *TRACE_FILES)
    ):
        raise UserError(f"{flag} {path}: the run writes its own {path.name} in --out {out}; give another {flag}")
    check_out_file(path, flag, overwrite, is_trace, "no ragbench-trace header on its first line")


def prepare_out_document(out: Path, overwrite: bool) -> None:
    """`--out FILE.json` of identity and doctor: refused like every other command's --out unless --overwrite,
    and then only a file ragbench wrote is replaced (a folder goes through bench.results.lifecycle)."""
    check_out_document(out, overwrite)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out}: {exc.strerror or exc}: {exc.filename or out.parent}") from None
