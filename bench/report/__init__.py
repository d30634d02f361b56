"""Reports built from a results file alone: report.md and a self-contained report.html (plots embedded),
plus what each kind of results adds (plots/, per_query.csv for quality).

Which report a results file gets is decided by the record types it holds (REPORT_KINDS below): each kind of
results has one module with `render(results, folder) -> (markdown, html body)` that writes its plots and
extra files into `folder`. A file holding several kinds gets every section (`covers`: a size report holds
its load points' report).

The files are written into a staging folder and moved into place together, uninterruptibly: after a
Ctrl-C, SIGTERM or crash the folder holds either the new report or none, never half of one or an
earlier run's report beside new results. Secrets are masked in the whole text of both files.
"""

from __future__ import annotations

import dataclasses
import importlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import InputError, UserError
from bench.core.interrupt import uninterruptible
from bench.core.secrets import mask
from bench.report.page import html_page
from bench.report.trace import REPLAY_FILE, write_trace_report
from bench.results.outdir import PLOT_PATTERNS, PLOTS_DIR, REPORT_FILES, RESULTS_FILE
from bench.results.schema import QUALITY_COMMANDS, RunCommand
from bench.results.store import Results, read_results


@dataclass(frozen=True)
class ReportKind:
    name: str
    records: tuple[str, ...]  # record types that belong to this kind of results
    commands: tuple[RunCommand, ...]  # commands that write it (a file cut before its first record still gets a report)
    module: str  # has `function`(results: Results, folder: Path) -> tuple[str, str]
    function: str = "render"
    covers: tuple[str, ...] = ()  # kinds whose sections this one's render already holds
    setting: str | None = None  # a header `load` setting that, when true, selects it too (a run cut before its records)


REPORT_KINDS: tuple[ReportKind, ...] = (
    ReportKind("quality", ("target", "query", "metrics", "comparison"), QUALITY_COMMANDS, "bench.report.quality"),
    ReportKind(
        "identity",
        ("identity_endpoint", "identity_embed_pair", "identity_rerank_pair", "identity"),
        (RunCommand.IDENTITY,),
        "bench.report.identity",
    ),
    ReportKind("doctor", ("doctor_finding",), (RunCommand.DOCTOR,), "bench.report.doctor"),
    ReportKind("load", ("load_point",), (RunCommand.LOAD,), "bench.report.load"),
    ReportKind(
        "size", ("sizing", "gpu_telemetry"), (RunCommand.SIZE,), "bench.report.sizing", "render_size", covers=("load",)
    ),
    ReportKind("size --trace", ("trace_size",), (), "bench.report.trace", "render_trace_size", covers=("size", "load")),
    ReportKind(
        "interleave",
        ("interleaved",),
        (),
        "bench.report.interleave",
        "render_interleave",
        covers=("load",),
        setting="interleave",
    ),
    ReportKind("ceiling", ("ceiling_point",), (RunCommand.CEILING,), "bench.report.sizing", "render_ceiling"),
    ReportKind("ingest", ("ingest_point", "ingest_summary"), (RunCommand.INGEST,), "bench.report.ingest"),
    ReportKind("grow", ("grow_rung", "grow"), (RunCommand.GROW,), "bench.report.grow"),
)


def kinds_of(results: Results) -> list[ReportKind]:
    settings = results.header.load or {}
    found = [
        k
        for k in REPORT_KINDS
        if any(results.of(r) for r in k.records)
        or results.header.command in k.commands
        or (k.setting is not None and settings.get(k.setting) is True)
    ]
    covered = {name for k in found for name in k.covers}
    found = [k for k in found if k.name not in covered]
    if not found:
        raise InputError(
            results.path,
            f"no report for the records of command {str(results.header.command)!r} "
            f"(record types: {', '.join(k for k, v in results.records.items() if v) or 'none'})",
        )
    return found


def write_report(source: Path | Results, out_dir: Path | None = None) -> Path:
    """Write report.md, report.html and each kind's extras next to the results (a results file, or one already read
    back); returns report.html."""
    if isinstance(source, Results):  # the report adds the metrics it recomputes to its own copy, not the caller's
        results = dataclasses.replace(source, records={k: list(v) for k, v in source.records.items()}, recomputed=[])
    else:
        results = read_results(source)
    results_path = results.path
    kinds = kinds_of(results)
    out_dir = Path(out_dir) if out_dir is not None else results_path.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out_dir))
    except OSError as exc:
        raise UserError(f"{out_dir}: cannot write the report there ({exc.strerror or exc})") from None
    try:
        sections = [getattr(importlib.import_module(k.module), k.function)(results, staging) for k in kinds]
        (staging / "report.md").write_text(mask("\n".join(md for md, _ in sections)), encoding="utf-8")
        title = f"ragbench {' + '.join(k.name for k in kinds)} report"
        (staging / "report.html").write_text(html_page(title, "".join(html for _, html in sections)), encoding="utf-8")
        with uninterruptible():
            _move_into_place(staging, out_dir)
    finally:
        with uninterruptible():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir / "report.html"


def _move_into_place(staging: Path, out_dir: Path) -> None:
    """Every file of the new report replaces its namesake; earlier plots this report lacks are removed."""
    new = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
    plots = out_dir / PLOTS_DIR
    for pattern in PLOT_PATTERNS:
        for old in plots.glob(pattern):
            if old.relative_to(out_dir) not in new:
                old.unlink()
    for relative in new:
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).replace(out_dir / relative)


def results_files(path: Path) -> list[Path]:
    """A results file as given, or every results.jsonl under a folder (a suite writes one per part)."""
    if path.is_dir():
        found = sorted(path.rglob(RESULTS_FILE))
        if not found:
            raise InputError(path, f"no {RESULTS_FILE} in this folder or below")
        return found
    if not path.exists():
        raise InputError(path, "no such results file or folder")
    return [path]


def report_files(out_dir: Path) -> list[Path]:
    """The files a report writes or removes in `out_dir` that are there now."""
    found = [out_dir / name for name in REPORT_FILES if (out_dir / name).exists() or (out_dir / name).is_symlink()]
    return found + [p for pattern in PLOT_PATTERNS for p in sorted((out_dir / PLOTS_DIR).glob(pattern))]


def write_reports(path: Path, out_dir: Path | None = None, overwrite: bool = False) -> list[Path]:
    """`ragbench report DIR|FILE`: a report beside every results file found, or in `out_dir`. Beside its results a
    report is rebuilt; another folder's report files (a user's, or another run's) are replaced only with `overwrite`."""
    if path.is_dir() and (path / REPLAY_FILE).is_file() and not any(path.rglob(RESULTS_FILE)):
        return [write_trace_report(path, out_dir)]  # a `load --trace` folder: its replay summary's report
    files = results_files(path)
    if out_dir is not None and len(files) > 1:
        raise UserError(f"report: {path} holds {len(files)} results files; --out takes one (give the file)")
    if out_dir is not None and out_dir.resolve() != files[0].resolve().parent and not overwrite:
        if out_dir.exists() and not out_dir.is_dir():
            raise UserError(f"--out {out_dir}: is a file, not a folder")
        if found := report_files(out_dir) if out_dir.is_dir() else []:
            raise UserError(
                f"--out {out_dir}: holds {found[0].relative_to(out_dir)}, not the report of {files[0]}; "
                "give --overwrite to replace it, or another --out"
            )
    return [write_report(f, out_dir) for f in files]
