"""The quality report (quality, demo): plots, per_query.csv, and the markdown and HTML sections.

A target whose metric records a cut-off run never wrote gets them recomputed from its run file and the
qrels written beside the results; the report says so.
"""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import UserError
from bench.quality.evaluation import read_qrels
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import read_run
from bench.quality.scoring import metric_records, short_rankings
from bench.report.plots import differences_plot, frontier_plot, latency_parts_plot, metrics_plot
from bench.report.quality_html import render_html
from bench.report.quality_markdown import render_markdown
from bench.report.quality_tables import write_per_query_csv
from bench.report.quality_under_load import render_under_load
from bench.results.outdir import PLOTS_DIR, QRELS_FILE
from bench.results.store import Results


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
            run = read_run(run_path)
            per_query = evaluate(read_qrels(qrels_path), run, measures, complete=True).per_query
        except UserError:
            continue  # e.g. an empty run file: the report shows the target without those metrics
        results.metrics.extend(
            metric_records(
                target.name,
                {m.trec_name: per_query[m.trec_name] for m in measures},
                h.measure_labels,
                h.measure_relevance,
                h.seed,
                short_rankings(measures, max(map(len, run.values()), default=None), h.dataset.get("documents", 0)),
            )
        )
        results.recomputed.append(target.name)


def render(results: Results, folder: Path) -> tuple[str, str]:
    recompute_missing_metrics(results)
    plots_dir = folder / PLOTS_DIR
    plots_dir.mkdir(exist_ok=True)
    plots: list[tuple[str, Path]] = []
    if metrics_plot(results, plots_dir / "metrics.png"):
        plots.append(("Metrics per target", plots_dir / "metrics.png"))
        primary = results.header.measures[0]
        diff = differences_plot(results, primary, plots_dir / f"differences_{primary}.png")
        if diff:
            label = results.header.measure_labels.get(primary, primary)
            plots.append((f"Per-query differences ({label})", diff))
    if frontier_plot(results, plots_dir / "frontier.png"):
        plots.append(("What each quality point costs", plots_dir / "frontier.png"))
    if latency_parts_plot(results, plots_dir / "latency_parts.png"):
        plots.append(("Where each query's time goes", plots_dir / "latency_parts.png"))
    write_per_query_csv(results, folder / "per_query.csv")
    (loaded_md, loaded_html), (changed_md, changed_html) = render_under_load(results)  # empty without --background
    md = render_markdown(results, plots, folder, loaded_md)
    return md + ("\n\n" + changed_md if changed_md else ""), render_html(results, plots, loaded_html) + changed_html
