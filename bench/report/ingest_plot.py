"""The ingest report's plot: docs/s per settings combination, one panel per target, lost documents and
combinations that could not be measured marked on their bars, the recommended one outlined."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.report.plots import save_figure
from bench.results.schema import IngestPointRecord, IngestStatus
from bench.results.store import Results

OK_COLOR = "#2a9d8f"
LOST_COLOR = "#e76f51"


def _mark(point: IngestPointRecord) -> str:
    """The text beside a bar: what went wrong, or the figure drawn."""
    if point.status == IngestStatus.FAILED:
        return "failed: not measured"
    said = f"{point.docs_per_s:.3g}" if point.docs_per_s is not None else "no document processed"
    if point.failed or point.lost:
        said += f"  ({point.failed} failed, {point.lost} lost)"
    return said


def docs_per_s_plot(results: Results, path: Path) -> Path | None:
    """None: no ingest point to draw."""
    targets = list(dict.fromkeys(p.target for p in results.ingest_points))
    if not targets:
        return None
    recommended = {s.target: s.recommended for s in results.ingest_summaries}
    sizes = [sum(1 for p in results.ingest_points if p.target == t) for t in targets]
    fig, axes = plt.subplots(
        len(targets), 1, figsize=(9, sum(0.45 * n + 1.0 for n in sizes)), squeeze=False, height_ratios=sizes
    )
    for ax, target in zip(axes[:, 0], targets):
        points = [p for p in results.ingest_points if p.target == target]
        values = [p.docs_per_s or 0.0 for p in points]
        colors = [OK_COLOR if p.status == IngestStatus.OK else LOST_COLOR for p in points]
        bars = ax.barh(range(len(points)), values, color=colors, alpha=0.85)
        for bar, point in zip(bars, points):
            if point.label == recommended.get(target):
                bar.set_edgecolor("black")
                bar.set_linewidth(2)
        top = max(values) or 1.0
        for y, point in enumerate(points):
            ax.text(values[y] + top * 0.01, y, _mark(point), va="center", fontsize=7)
        ax.set_yticks(range(len(points)), [p.label for p in points], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, top * 1.45)
        ax.set_xlabel("documents/s (processed)", fontsize=8)
        ax.set_title(target + (" (outlined: recommended)" if recommended.get(target) else ""), fontsize=9)
    return save_figure(fig, path)
