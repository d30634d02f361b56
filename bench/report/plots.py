"""Plots for the reports (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bench.report.quality_frontier import frontiers, part_names
from bench.results.store import Results


def save_figure(fig: Any, path: Path) -> Path:
    """Every report's figures are written alike: laid out, 110 dpi, closed (pyplot keeps open figures alive)."""
    with warnings.catch_warnings():  # long labels that do not fit: the plot is kept as laid; stderr stays one line
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def metrics_plot(results: Results, path: Path) -> Path | None:
    """One panel per measure: each target's mean with its 95% bootstrap interval (None: no target has metrics)."""
    measures = results.header.measures
    targets = [t.name for t in results.targets if all(results.metric(t.name, m) for m in measures)]
    if not targets:
        return None
    fig, axes = plt.subplots(
        1, len(measures), figsize=(3.2 * len(measures) + 1, 0.45 * len(targets) + 1.8), squeeze=False
    )
    colors = plt.cm.tab10(np.arange(len(targets)) % 10)
    for ax, measure in zip(axes[0], measures):
        records = [m for t in targets if (m := results.metric(t, measure)) is not None]  # each is (targets)
        means = np.array([r.mean for r in records])
        low = means - np.array([r.ci_low for r in records])
        high = np.array([r.ci_high for r in records]) - means
        y = np.arange(len(targets))
        ax.barh(y, means, xerr=[low, high], color=colors, capsize=3, alpha=0.85)
        ax.set_yticks(y, targets if ax is axes[0][0] else [""] * len(targets))
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(results.header.measure_labels.get(measure, measure))
        for yi, m in zip(y, means):  # inside the bar's left end, clear of the error bar
            ax.text(0.02, yi, f"{m:.3f}", va="center", fontsize=8, color="white", fontweight="bold")
    fig.suptitle("Mean per target (bars: 95% bootstrap interval)", fontsize=10)
    return save_figure(fig, path)


def differences_plot(results: Results, measure: str, path: Path) -> Path | None:
    """Per-query differences (b − a) for every pair, sorted: where one target wins and loses."""
    pairs = [
        (c.a, c.b, ma.per_query, mb.per_query)
        for c in results.comparisons
        if c.measure == measure
        and (ma := results.metric(c.a, measure)) is not None
        and (mb := results.metric(c.b, measure)) is not None
    ]
    if not pairs:
        return None
    fig, axes = plt.subplots(len(pairs), 1, figsize=(8, 2.0 * len(pairs) + 0.6), squeeze=False)
    label = results.header.measure_labels.get(measure, measure)
    for ax, (a, b, va, vb) in zip(axes[:, 0], pairs):
        diff = np.sort(np.array([vb[q] - va[q] for q in va]))
        x = np.arange(diff.size)
        ax.bar(x, diff, width=1.0, color=np.where(diff >= 0, "#2a9d8f", "#e76f51"))
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylim(-1.05, 1.05)
        wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
        ax.set_title(f"{b} − {a}: {wins} queries better, {losses} worse, {diff.size - wins - losses} tied", fontsize=9)
        ax.set_xticks([])
        ax.set_ylabel(f"Δ {label}", fontsize=8)
    return save_figure(fig, path)


def identity_length_plot(results: Results, path: Path) -> Path | None:
    """Min cosine per token-length bucket for each embedding pair, against the pair's threshold."""
    pairs = [p for p in results.of("identity_embed_pair") if p.by_token_length]
    if not pairs:
        return None
    fig, ax = plt.subplots(figsize=(8, 3.2))
    buckets = list(dict.fromkeys(b.tokens for p in pairs for b in p.by_token_length))
    width = 0.8 / len(pairs)
    for i, p in enumerate(pairs):
        by = {b.tokens: b.cosine_min for b in p.by_token_length}
        xs = [j + i * width for j, name in enumerate(buckets) if name in by]
        bars = ax.bar(xs, [by[name] for name in buckets if name in by], width=width, label=f"{p.a} ~ {p.b}")
        ax.hlines(
            p.thresholds.get("min_cosine", 1.0),
            -0.5,
            len(buckets),
            colors=bars.patches[0].get_facecolor(),
            linestyles="dashed",
            linewidth=0.8,
        )
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(buckets))], buckets)
    ax.set_xlabel("text length (tokens)")
    ax.set_ylabel("min cosine")
    low = min(min(b.cosine_min for b in p.by_token_length) for p in pairs)
    ax.set_ylim(min(low, 0.99) - 0.005, 1.0005)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("Agreement by text length (dashed: the pair's min-cosine threshold)", fontsize=9)
    return save_figure(fig, path)


def frontier_plot(results: Results, path: Path) -> Path | None:
    """Quality against each cost, one panel per cost with a figure for some target: every finished target a
    point, the Pareto-optimal ones filled and joined (the frontier table's `Pareto-optimal against` column);
    None when no cost has a point."""
    shown = [f for f in frontiers(results) if f.points]
    if not shown:
        return None
    measure = results.header.measures[0]
    label = results.header.measure_labels.get(measure, measure)
    fig, axes = plt.subplots(1, len(shown), figsize=(3.6 * len(shown) + 0.6, 3.4), squeeze=False)
    for ax, frontier in zip(axes[0], shown):
        for name, (quality, cost) in frontier.points.items():
            optimal = name in frontier.optimal
            ax.scatter(
                cost,
                quality,
                s=40,
                marker="o",
                facecolors="#e76f51" if optimal else "none",
                edgecolors="#e76f51" if optimal else "#555555",
                zorder=3,
            )
            ax.annotate(name, (cost, quality), fontsize=7, xytext=(4, 3), textcoords="offset points")
        best = sorted((frontier.points[n] for n in frontier.optimal), key=lambda p: p[1])
        if len(best) > 1:
            ax.plot([p[1] for p in best], [p[0] for p in best], color="#e76f51", linewidth=0.8, zorder=2)
        better = "lower" if frontier.cost.lower_is_better else "higher"
        ax.set_xlabel(f"{frontier.cost.name} ({better} is cheaper)", fontsize=8)
        ax.set_ylabel(label if ax is axes[0][0] else "", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.margins(0.15)
    fig.suptitle(f"{label} against each cost (filled: Pareto-optimal)", fontsize=10)
    return save_figure(fig, path)


def latency_parts_plot(results: Results, path: Path) -> Path | None:
    """Each target's latency parts stacked, p50 and p99 side by side, the whole query's percentile marked
    (parts' percentiles need not add up to it); None when no target splits its latency."""
    targets = [t for t in results.targets if t.latency_parts_ms]
    if not targets:
        return None
    parts = part_names(results)
    colors = plt.cm.tab10(np.arange(len(parts)) % 10)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.5 * len(targets) + 2.0), squeeze=False)
    y = np.arange(len(targets))
    for ax, quantile in zip(axes[0], ("p50", "p99")):
        left = np.zeros(len(targets))
        for part, color in zip(parts, colors):
            widths = np.array([t.latency_parts_ms.get(part, {}).get(quantile) or 0.0 for t in targets])
            ax.barh(y, widths, left=left, color=color, label=part.removesuffix("_ms"))
            left += widths
        whole = [t.latency_ms.get(quantile) for t in targets]
        marked = [(yi, w) for yi, w in zip(y, whole) if w is not None]
        if marked:
            ax.scatter([w for _, w in marked], [yi for yi, _ in marked], marker="|", s=200, color="black", zorder=3)
        ax.set_yticks(y, [t.name for t in targets] if ax is axes[0][0] else [""] * len(targets), fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"{quantile} ms per part (|: the whole query's {quantile})", fontsize=8)
        ax.tick_params(labelsize=7)
    # Beside the panels, not over them: a short bar would hide under it.
    axes[0][1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Where each query's time goes", fontsize=10)
    return save_figure(fig, path)
