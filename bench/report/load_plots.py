"""The load report's plots: throughput vs concurrency, latency vs offered rate, latency CDFs, the batch x
concurrency heatmap, errors per class and TEI's time split, each drawn from `load_point` records."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bench.load import histograms
from bench.load.points import point_label
from bench.report.plots import save_figure as _save
from bench.results.schema import LoadPointRecord, Loop, PointStatus

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

MAX_CDF_LINES = 12


def shown(r: LoadPointRecord, value: float) -> float:
    """A point's figure as a plot draws it: a failed point (nothing measured or succeeded) is a gap (NaN), never
    a 0 that reads as a measured zero throughput."""
    return float("nan") if r.status == PointStatus.FAILED else value


def _finish(
    fig: Figure, ax: Axes, path: Path, xlabel: str, ylabel: str, xscale: str | None = None, legend: int = 8
) -> Path:
    if xscale == "log2":
        ax.set_xscale("log", base=2)
    elif xscale:
        ax.set_xscale(xscale)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=legend)
    return _save(fig, path)


def _line(r: LoadPointRecord) -> tuple[str, int, str, int, str]:
    """A closed-loop line: endpoint, batch (or documents distribution), length (or length distribution)."""
    return r.endpoint, r.batch, r.size_text, r.length or 0, r.length_text or ""


def _panel(r: LoadPointRecord) -> tuple[str, int, str]:
    """A heatmap panel: endpoint and length (`--lengths`, a number or from:DATASET), in length order."""
    return r.endpoint, r.length or 0, r.length_text or ""


def throughput_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    closed = [r for r in points if r.loop == Loop.CLOSED]
    if not closed:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({_line(r) for r in closed}):
        line = sorted((r for r in closed if _line(r) == key), key=lambda r: r.concurrency or 0)
        ax.plot(
            [r.concurrency or 0 for r in line],
            [shown(r, r.throughput.texts_per_s) for r in line],
            marker="o",
            label=f"{key[0]} batch {key[2]}" + (f" len {key[4]}" if key[4] else ""),
        )
    return _finish(fig, ax, path, "concurrency (closed loop)", "texts/s", "log2")


def rate_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    opened = [r for r in points if r.loop == Loop.OPEN]
    if not opened:
        return None
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"service": "-", "scheduled": "--", "dispatch_delay": ":"}
    for key in sorted({(r.endpoint, r.batch, r.max_inflight or 0, r.arrival) for r in opened}):
        line = sorted(
            (r for r in opened if (r.endpoint, r.batch, r.max_inflight or 0, r.arrival) == key),
            key=lambda r: r.rate or 0.0,
        )
        name = f"{key[0]} b{key[1]} {key[3]}" + (f" cap {key[2]}" if key[2] else "")
        for quantity, style in styles.items():
            measured = [
                (r.rate, block.p99)
                for r in line
                if (block := getattr(r.latency_ms, quantity)) and block.p99 is not None
            ]
            xs, ys = [x for x, _ in measured], [y for _, y in measured]
            if xs:
                ax.plot(xs, ys, style, marker="o", label=f"{name} {quantity} p99")
        ax2.plot(
            [r.rate for r in line],
            [shown(r, r.throughput.requests_per_s) for r in line],
            marker="o",
            label=f"{name} achieved",
        )
        # What the schedule itself set (a Poisson schedule's count varies about rate x window): achieved below it
        # is a server behind, below the nominal rate alone may be the schedule's draw.
        scheduled = [(r.rate, rate) for r in line if (rate := _scheduled_rate(r)) is not None]
        if scheduled:
            ax2.plot(*zip(*scheduled), "x", label=f"{name} scheduled")
        for r in line:
            if r.requests.unsent:
                ax2.annotate(f"{r.requests.unsent} unsent", (r.rate, r.throughput.requests_per_s), fontsize=7)
            if r.status == PointStatus.BEHIND:
                ax2.annotate("behind", (r.rate, r.throughput.requests_per_s), fontsize=7, va="top")
    ax.set_yscale("log")
    ax.set_xlabel("offered rate (requests/s)")
    ax.set_ylabel("latency p99 (ms)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # no line where every p99 rests on too few answers
        ax.legend(fontsize=7)
    top = max(r.rate or 0.0 for r in opened)
    ax2.plot([0, top], [0, top], "k:", linewidth=0.8, label="achieved = offered")
    ax2.set_xlabel("offered rate (requests/s)")
    ax2.set_ylabel("achieved requests/s (scheduled: x; unsent, behind marked)")
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7)
    return _save(fig, path)


def _scheduled_rate(r: LoadPointRecord) -> float | None:
    """Requests/s the schedule itself set, where the point records it."""
    scheduled, window = r.requests.scheduled, r.requests.scheduled_s
    return scheduled / window if scheduled is not None and window else None


def cdf_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    chosen = [r for r in points if r.histograms.get("scheduled") or r.histograms.get("service")][:MAX_CDF_LINES]
    if not chosen:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in chosen:
        quantity = "scheduled" if r.histograms.get("scheduled") else "service"
        xs, ys = zip(*histograms.cdf_ms(histograms.decode(r.histograms[quantity])))
        ax.plot(xs, ys, label=f"{point_label(r, r.endpoint)} ({quantity})")
    return _finish(fig, ax, path, "latency (ms)", "fraction of requests", "log", legend=7)


def heatmap_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    """One panel per endpoint and text length (`--lengths`): texts/s over batch x concurrency; a failed point's
    cell is left empty and says so."""
    closed = [r for r in points if r.loop == Loop.CLOSED]
    batches = sorted({(r.batch, r.size_text) for r in closed})  # a documents distribution: its own row
    concs = sorted({r.concurrency or 0 for r in closed})
    panels = sorted({_panel(r) for r in closed})
    if len(batches) < 2 and len(concs) < 2:
        return None
    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(4.5 * columns + 1, (0.5 * len(batches) + 2.5) * rows), squeeze=False
    )
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, (endpoint, order, length) in zip(axes.flat, panels):
        grid = np.full((len(batches), len(concs)), np.nan)
        failed = set()
        for r in closed:
            if _panel(r) == (endpoint, order, length):
                cell = (batches.index((r.batch, r.size_text)), concs.index(r.concurrency or 0))
                grid[cell] = shown(r, r.throughput.texts_per_s)
                if r.status == PointStatus.FAILED:
                    failed.add(cell)
        image = ax.imshow(grid, cmap="viridis", aspect="auto")
        for i in range(len(batches)):
            for j in range(len(concs)):
                if not np.isnan(grid[i, j]):
                    dark = image.norm(grid[i, j]) < 0.6  # viridis: white on its dark end, black on its yellow end
                    ax.text(j, i, f"{grid[i, j]:.0f}", ha="center", va="center", color="w" if dark else "k", fontsize=8)
                elif (i, j) in failed:
                    ax.text(j, i, "failed", ha="center", va="center", color="tab:red", fontsize=8)
        ax.set_xticks(range(len(concs)), [str(c) for c in concs])
        ax.set_yticks(range(len(batches)), [text for _, text in batches])
        ax.set_xlabel("concurrency")
        ax.set_ylabel("batch")
        ax.set_title(f"{endpoint}" + (f", length {length}" if length else "") + ": texts/s")
        fig.colorbar(image, ax=ax)
    return _save(fig, path)


def errors_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    classes = sorted({c for r in points for c in r.requests.errors})
    if not classes:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(points) + 1.5))
    left = np.zeros(len(points))
    for cls in classes:
        values = np.array([r.requests.errors.get(cls, 0) for r in points], dtype=float)
        ax.barh(range(len(points)), values, left=left, label=cls)
        left += values
    ax.set_yticks(range(len(points)), [point_label(r, r.endpoint) for r in points], fontsize=7)
    ax.set_xlabel("errors")
    ax.legend(fontsize=8)
    return _save(fig, path)


def split_plot(points: list[LoadPointRecord], path: Path) -> Path | None:
    quantities = ("queue", "tokenization", "inference")
    with_split = [r for r in points if any(getattr(r.server_ms, q) for q in quantities)]
    if not with_split:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(with_split) + 1.5))
    left = np.zeros(len(with_split))
    for quantity in quantities:
        values = np.array([block.mean if (block := getattr(r.server_ms, quantity)) else 0.0 for r in with_split])
        ax.barh(range(len(with_split)), values, left=left, label=quantity)
        left += values
    service = [r.latency_ms.service.mean if r.latency_ms.service else np.nan for r in with_split]
    ax.plot(service, range(len(with_split)), "k|", markersize=12, label="client service mean")
    ax.set_yticks(range(len(with_split)), [point_label(r, r.endpoint) for r in with_split], fontsize=7)
    ax.set_xlabel("mean ms per request (TEI x-queue-time, x-tokenization-time, x-inference-time)")
    ax.legend(fontsize=8)
    return _save(fig, path)


def draw_plots(points: list[LoadPointRecord], plots_dir: Path) -> list[tuple[str, Path]]:
    """Every plot the points allow, with its title (a plot with nothing to show is left out)."""
    plots_dir.mkdir(parents=True, exist_ok=True)
    made = [
        ("Throughput vs concurrency (closed loop)", throughput_plot(points, plots_dir / "load_throughput.png")),
        ("Latency p99 and achieved rate vs offered rate (open loop)", rate_plot(points, plots_dir / "load_rate.png")),
        ("Latency CDFs (scheduled where measured, else service)", cdf_plot(points, plots_dir / "load_cdf.png")),
        ("Texts/s over batch x concurrency", heatmap_plot(points, plots_dir / "load_heatmap.png")),
        ("Errors per class", errors_plot(points, plots_dir / "load_errors.png")),
        ("TEI's split of each request", split_plot(points, plots_dir / "load_server_split.png")),
    ]
    return [(title, path) for title, path in made if path is not None]
