"""Reports built from a results file alone: report.md, self-contained report.html, plots, per-query CSV
(a load sweep: bench/report/load.py).

The files are written into a staging folder and moved into place together, uninterruptibly: after a
Ctrl-C, SIGTERM or crash the folder holds either the new report or none, never half of one or an
earlier run's report beside new results. A target whose metric records a cut-off run never wrote gets
them recomputed from its run file and the qrels written beside the results; the report says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from bench.errors import UserError
from bench.interrupt import uninterruptible
from bench.quality.evaluation import read_qrels
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import read_run
from bench.quality.scoring import metric_records
from bench.report.html import render_html
from bench.report.markdown import render_markdown
from bench.report.plots import differences_plot, metrics_plot
from bench.report.tables import write_per_query_csv
from bench.results.outdir import PLOT_PATTERNS, PLOTS_DIR, QRELS_FILE
from bench.results.store import Results, read_results


def recompute_missing_metrics(results: Results) -> None:
    """Ranking metrics that a cut-off run never wrote for a finished target, from its run file and
    qrels.trec (when both exist). Answer measures need the answers and texts, so they stay missing."""
    base = results.path.parent
    qrels_path = base / QRELS_FILE
    h = results.header
    for target in results.targets:
        missing = [m for m in h.measures if not results.metric(target.name, m)]
        run_path = base / target.run_file
        if not missing or not (qrels_path.is_file() and run_path.is_file()):
            continue
        try:
            measures = [m for m in map(parse_measure, missing) if not m.answer_based]
            per_query = evaluate(read_qrels(qrels_path), read_run(run_path), measures, complete=True).per_query
        except UserError:
            continue  # e.g. an empty run file: the report shows the target without those metrics
        results.metrics += metric_records(target.name, {m.trec_name: per_query[m.trec_name] for m in measures},
                                          h.measure_labels, h.measure_relevance, h.seed)
        results.recomputed.append(target.name)


def write_report(results_path: Path, out_dir: Path | None = None) -> Path:
    """Write report.md, report.html, plots/ (and per_query.csv for quality) next to the results; returns report.html."""
    results_path = Path(results_path)
    results = read_results(results_path)
    out_dir = Path(out_dir) if out_dir is not None else results_path.parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".report-", dir=out_dir))
    except OSError as exc:
        raise UserError(f"{out_dir}: cannot write the report there ({exc.strerror or exc})") from None
    try:
        if results.header.command == "load":  # a load sweep has its own report
            from bench.report.load import write_load_report

            write_load_report(results, staging)
        elif results.header.command in ("size", "ceiling"):  # so has sizing (bench/report/sizing.py)
            from bench.report.sizing import write_ceiling_report, write_size_report

            (write_size_report if results.header.command == "size" else write_ceiling_report)(results, staging)
        else:
            _render_quality(results, staging)
        with uninterruptible():
            _move_into_place(staging, out_dir)
    finally:
        with uninterruptible():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir / "report.html"


def _render_quality(results: Results, staging: Path) -> None:
    recompute_missing_metrics(results)
    plots_dir = staging / PLOTS_DIR
    plots_dir.mkdir()
    plots: list[tuple[str, Path]] = []
    if metrics_plot(results, plots_dir / "metrics.png"):
        plots.append(("Metrics per target", plots_dir / "metrics.png"))
        primary = results.header.measures[0]
        diff = differences_plot(results, primary, plots_dir / f"differences_{primary}.png")
        if diff:
            label = results.header.measure_labels.get(primary, primary)
            plots.append((f"Per-query differences ({label})", diff))
    write_per_query_csv(results, staging / "per_query.csv")
    (staging / "report.md").write_text(render_markdown(results, plots, staging), encoding="utf-8")
    (staging / "report.html").write_text(render_html(results, plots), encoding="utf-8")


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
        os.replace(staging / relative, out_dir / relative)
