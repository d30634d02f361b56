"""Reports built from a results file alone: report.md, self-contained report.html, plots, per-query CSV."""

from __future__ import annotations

from pathlib import Path

from bench.report.html import render_html
from bench.report.markdown import render_markdown
from bench.report.plots import differences_plot, metrics_plot
from bench.report.tables import write_per_query_csv
from bench.results.store import read_results


def write_report(results_path: Path, out_dir: Path | None = None) -> Path:
    """Write report.md, report.html, plots/ and per_query.csv next to the results; returns report.html."""
    results = read_results(results_path)
    out_dir = out_dir or results_path.parent
    if results.header.command == "load":  # a load sweep has its own report
        from bench.report.load import write_load_report

        out_dir.mkdir(parents=True, exist_ok=True)
        return write_load_report(results, out_dir)
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    plots: list[tuple[str, Path]] = []
    if results.metrics:
        plots.append(("Metrics per target", metrics_plot(results, plots_dir / "metrics.png")))
        primary = results.header.measures[0]
        diff = differences_plot(results, primary, plots_dir / f"differences_{primary}.png")
        if diff:
            label = results.header.measure_labels.get(primary, primary)
            plots.append((f"Per-query differences ({label})", diff))
    write_per_query_csv(results, out_dir / "per_query.csv")
    (out_dir / "report.md").write_text(render_markdown(results, plots, out_dir), encoding="utf-8")
    html_path = out_dir / "report.html"
    html_path.write_text(render_html(results, plots), encoding="utf-8")
    return html_path
