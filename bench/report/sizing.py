"""Reports for `ragbench size` and `ragbench ceiling`, from their results files alone.

size: the answer first — per endpoint and length the recommendation (saturation rate first, then the
settings, replicas and cost, each line naming its evidence), the goodput curve (texts/s against the SLO's
percentile with the SLO line; each measurement its own marker, coloured by its own verdict), GPU telemetry per
point under the throughput — then the load report of every measured point it rests on (bench/report/load.py).
ceiling: texts/s, tokens/s and FLOP/s per length and batch.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from bench.load.points import (
    error_rate,
    percentile_ms,
    point_label,
    texts_per_s,
)
from bench.report.end_status import run_status
from bench.report.labels import labels_sentence
from bench.report.load import render
from bench.report.load_plots import shown
from bench.report.page import html_figure, html_table, md_figure, md_table
from bench.report.plots import save_figure
from bench.results.schema import LoadPointRecord, Loop, SizingRecord
from bench.results.schema.sizing import GpuQuantity
from bench.results.store import Results

# The NVML quantities a size run samples (bench/sizing/telemetry.py QUANTITIES), with their axis labels.
TELEMETRY: tuple[tuple[GpuQuantity, str], ...] = (
    ("utilization_pct", "GPU utilisation %"),
    ("memory_used_mib", "memory used MiB"),
    ("power_w", "power W"),
    ("sm_clock_mhz", "SM clock MHz"),
)


def _slo(sizing: SizingRecord) -> str:
    """`p99 2000 ms`: the SLO's percentile (p99 when the record does not say) and latency."""
    return f"p{sizing.slo_percentile or 99:g} {sizing.slo_p99_ms:g} ms"


def _stopped_text(sizing: SizingRecord) -> str:
    """A best so far: a lower bound only while no rate failed above it; else the interval the answer lies in."""
    sat = sizing.saturation
    if sat is not None and sat.rate is None:  # no pass: no lower bound to speak of
        below = (
            f" it lies below {sat.first_failure:g} requests/s, the lowest rate that failed" if sat.first_failure else ""
        )
        return f"Stopped early ({sizing.stopped}): no rate passed yet;{below or ' nothing bounds it yet'}."
    if sat is not None and sat.lower_bound is None and sat.first_failure is not None:
        return (
            f"Stopped early ({sizing.stopped}): the saturation rate lies between the highest rate passed on a "
            "steady window and the lowest failed, both in the lines below."
        )
    return f"Best so far, a lower bound: {sizing.stopped}. The rates passed and failed are in the lines below."


def _of(points: list[LoadPointRecord], sizing: SizingRecord) -> list[LoadPointRecord]:
    return [
        p
        for p in points
        if p.endpoint == sizing.endpoint
        and p.op == sizing.op
        and p.length == sizing.length
        and (p.length_distribution.source if p.length_distribution else None) == sizing.length_from
    ]


def goodput_plot(points: list[LoadPointRecord], sizing: SizingRecord, path: Path) -> Path | None:
    """Texts/s against the SLO's percentile: open-loop probes (scheduled) pass or fail the SLO line; closed points
    (service)."""
    mine = _of(points, sizing)
    q = sizing.slo_percentile or 99.0  # the SLO's percentile is the one plotted
    probes = [p for p in mine if p.loop == Loop.OPEN and percentile_ms(p, "scheduled", q) is not None]
    closed = [p for p in mine if p.loop == Loop.CLOSED and percentile_ms(p, "service", q) is not None]
    if not probes and not closed:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for batch in sorted({p.batch for p in closed}):
        series = sorted((p for p in closed if p.batch == batch), key=lambda p: p.concurrency or 0)
        _mark(ax, series, "service", q, "o-", alpha=0.5, label=f"closed loop, batch {batch} (service p{q:g})")
    _probe_marks(ax, probes, sizing, q)
    passed = sizing.saturation
    ax.axhline(sizing.slo_p99_ms, color="k", linestyle="--", label=f"SLO {_slo(sizing)}")
    if passed and passed.texts_per_s:
        ax.axvline(
            passed.texts_per_s,
            color="tab:green",
            linestyle=":",
            label=f"answered at the saturation rate: {passed.texts_per_s:.3g} texts/s",
        )
    ax.set_yscale("log")
    ax.set_xlabel("texts/s (answered)")
    ax.set_ylabel(f"p{q:g} latency, ms (log)")
    ax.set_title(f"{sizing.endpoint}, {sizing.op}, length {sizing.length_text}")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def _mark(ax: Axes, points: list[LoadPointRecord], quantity: str, q: float, style: str, **kwargs: Any) -> None:
    """`points` at their answered texts/s and their `quantity`'s q-th percentile, if any."""
    if points:
        ax.plot(
            [shown(p, texts_per_s(p)) for p in points],
            np.array([percentile_ms(p, quantity, q) for p in points], dtype=float),  # each set (filtered by caller)
            style,
            **kwargs,
        )


def _probe_marks(ax: Axes, probes: list[LoadPointRecord], sizing: SizingRecord, q: float) -> None:
    """Each measurement its own marker, coloured by its own verdict: a probe measured again (the majority of up to
    three decides the probe) shows every measurement, so no marker sits on the wrong side of the SLO line. A
    measurement whose queue was still growing failed whatever its percentile; one within the SLO on a window the
    budget cut short is drawn hollow green (unconfirmed); one with fewer requests than a percentile needs
    (1/(1 − q): 20 for a p95) hollow grey, as the table calls it insufficient."""
    judged = sizing.saturation.probes if sizing.saturation else []
    growing = {p.point for p in judged if p.unsteady}
    short = {p.point for p in judged if p.unconfirmed}

    def within(p: LoadPointRecord) -> bool:
        value = percentile_ms(p, "scheduled", q)
        return (
            point_label(p) not in growing
            and value is not None
            and value <= sizing.slo_p99_ms
            and error_rate(p.requests) <= sizing.max_error_rate
        )

    def enough(p: LoadPointRecord) -> bool:
        return p.requests.ok >= math.ceil(1 / (1 - q / 100.0) - 1e-9)

    by_rate = sorted(probes, key=lambda p: p.rate or 0)
    counted = [p for p in by_rate if enough(p)]
    steady = [p for p in counted if within(p) and point_label(p) not in short]
    cut = [p for p in counted if within(p) and point_label(p) in short]
    over = [p for p in counted if not within(p)]
    name = f"(scheduled p{q:g})"
    hollow = {"markerfacecolor": "none"}
    marks: list[tuple[list[LoadPointRecord], str, dict[str, str], str]] = [
        (steady, "s", {"color": "tab:green"}, f"open-loop within SLO {name}"),
        (cut, "s", {**hollow, "color": "tab:green"}, f"open-loop within SLO on a window cut short, unconfirmed {name}"),
        (over, "x", {"color": "tab:red"}, f"open-loop over SLO, errors or a growing queue {name}"),
        (
            [p for p in by_rate if not enough(p)],
            "o",
            {**hollow, "color": "tab:gray"},
            f"open-loop measurement, too few requests for a p{q:g}",
        ),
    ]
    for points, style, look, label in marks:
        _mark(ax, points, "scheduled", q, style, markersize=8, label=label, **look)


def telemetry_plot(results: Results, sizing: SizingRecord, path: Path) -> Path | None:
    """Per point in measured order: texts/s on top, then mean (bar) and max (tick) of each NVML quantity."""
    windows = {t.point: t for t in results.gpu_telemetry if t.endpoint == sizing.endpoint}
    mine = [p for p in _of(results.load_points, sizing) if point_label(p) in windows]
    if not mine:
        return None
    fig, axes = plt.subplots(1 + len(TELEMETRY), 1, figsize=(10, 2 + 1.6 * len(TELEMETRY)), sharex=True)
    x = range(len(mine))
    axes[0].bar(x, [shown(p, texts_per_s(p)) for p in mine], color="tab:blue")
    axes[0].set_ylabel("texts/s")
    for ax, (key, name) in zip(axes[1:], TELEMETRY):
        gpus = sorted({g["gpu"] for p in mine for g in windows[point_label(p)].gpus})
        width = 0.8 / max(len(gpus), 1)
        for k, gpu in enumerate(gpus):
            blocks = [next((g.get(key) for g in windows[point_label(p)].gpus if g["gpu"] == gpu), None) for p in mine]
            xs = [i + k * width for i in x]
            ax.bar(xs, [b["mean"] if b else 0 for b in blocks], width=width, label=f"GPU {gpu} mean")
            ax.plot(xs, [b["max"] if b else float("nan") for b in blocks], "k_", markersize=8)
        ax.set_ylabel(name, fontsize=8)
    axes[-1].set_xticks(list(x), [point_label(p) for p in mine], rotation=60, ha="right", fontsize=6)
    axes[1].legend(fontsize=7)
    return save_figure(fig, path)


def sizing_sections(results: Results, out_dir: Path) -> tuple[list[str], list[str]]:
    """(markdown lines, html fragments) of the sizing part of a size report."""
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    md: list[str] = []
    html: list[str] = []
    if not results.sizing:
        note = (
            "No sizing record: the run ended before the first recommendation (a run of this version writes a "
            "best-so-far one on --max-time, Ctrl-C or SIGTERM); the points below are what finished."
        )
        return [*md, note, ""], [*html, f"<p class='bad'>{escape(note)}</p>"]
    for number, sizing in enumerate(results.sizing, 1):
        title = (
            f"Answer: {sizing.endpoint} — {sizing.op}, length {sizing.length_text}, SLO {_slo(sizing)}, "
            f"errors ≤ {sizing.max_error_rate:g}"
        )
        best = [_stopped_text(sizing)] if sizing.stopped else []
        # The saturation rate first: every other setting (replicas, cost) follows from it.
        lines = sorted(sizing.lines, key=lambda line: not line.setting.startswith("saturation"))
        rows = [[line.setting, line.value, line.why, "; ".join(line.evidence) or "-"] for line in lines]
        header = ["setting", "value", "why", "evidence (points)"]
        # what a tighter answer needs (requests and seconds a probe at the undecided rates), when the record says
        tighter = [sizing.saturation.tighter] if sizing.saturation is not None and sizing.saturation.tighter else []
        md += [f"## {title}", "", *[f"**{b}**" for b in best], "", md_table(header, rows), "", *tighter, ""]
        telemetry = sizing.telemetry if sizing.telemetry.startswith("no GPU") else f"GPU telemetry: {sizing.telemetry}"
        md += [telemetry, ""]
        html += [
            f"<h2>{escape(title)}</h2>",
            *[f"<p class='bad'>{escape(b)}</p>" for b in best],
            html_table(header, rows),
            *[f"<p>{escape(t)}</p>" for t in tighter],
            f"<p>{escape(telemetry)}</p>",
        ]
        plots = [
            (
                f"Goodput: texts/s against p{sizing.slo_percentile or 99:g}, with the SLO",
                goodput_plot(results.load_points, sizing, plots_dir / f"size_goodput_{number}.png"),
            ),
            (
                "GPU telemetry per point, under the throughput",
                telemetry_plot(results, sizing, plots_dir / f"size_telemetry_{number}.png"),
            ),
        ]
        for plot_title, path in plots:
            if path is not None:
                md += [f"### {plot_title}", "", md_figure(plot_title, path, out_dir), ""]
                html.append(f"<h3>{escape(plot_title)}</h3>{html_figure(plot_title, path)}")
    return md, html


def render_size(results: Results, folder: Path) -> tuple[str, str]:
    """The sizing sections (the answer) first, then the load report of every point they rest on."""
    md, html = render(results, folder, "size", sizing_sections(results, folder))
    return md + "\n", html


def ceiling_table(results: Results) -> tuple[list[str], list[list[str]]]:
    header = [
        "model",
        "op",
        "device",
        "dtype",
        "length",
        "tokens read",
        "batch",
        "texts/s",
        "tokens/s",
        "TFLOP/s",
        "peak TFLOP/s (source)",
        "of peak",
    ]
    rows = [
        [
            Path(c.model).name or c.model,
            c.op,
            c.device_name,
            c.dtype,
            str(c.length),
            f"{c.tokens_per_text:.0f}",
            str(c.batch),
            f"{c.texts_per_s:.1f}",
            f"{c.tokens_per_s:.0f}",
            f"{c.achieved_tflops:.3f}",
            f"{c.peak_tflops:g} ({c.peak_source})" if c.peak_tflops else "unknown",
            f"{c.peak_fraction:.1%}" if c.peak_fraction is not None else "-",
        ]
        for c in results.ceiling
    ]
    return header, rows


def ceiling_plot(results: Results, path: Path) -> Path | None:
    if not results.ceiling:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({(c.length, c.dtype) for c in results.ceiling}):
        series = sorted((c for c in results.ceiling if (c.length, c.dtype) == key), key=lambda c: c.batch)
        ax.plot([c.batch for c in series], [c.texts_per_s for c in series], "o-", label=f"length {key[0]}, {key[1]}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch")
    ax.set_ylabel("texts/s (in-process)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def render_ceiling(results: Results, folder: Path) -> tuple[str, str]:
    plots_dir = folder / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    status = run_status(results.end)
    header, rows = ceiling_table(results)
    plot = ceiling_plot(results, plots_dir / "ceiling.png")
    intro = (
        f"Created {results.header.created}. In-process throughput of the reference model through "
        "sentence-transformers; FLOP/s from the model's config.json (docs/sizing.md has the formula)."
        + labels_sentence(results.header)
    )
    md = ["# ragbench ceiling report", "", intro, "", f"Status: **{status.text}**", "", md_table(header, rows), ""]
    html = [
        "<h1>ragbench ceiling report</h1>",
        f"<p>{escape(intro)}</p>",
        f"<p class='{'' if status.complete else 'bad'}'>Status: {escape(status.text)}</p>",
        html_table(header, rows),
    ]
    if plot is not None:
        md += ["## Texts/s per batch", "", md_figure("texts/s per batch", plot, folder), ""]
        html.append(f"<h3>Texts/s per batch</h3>{html_figure('Texts/s per batch', plot)}")
    return "\n".join(md), "\n".join(html)
