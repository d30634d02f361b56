"""The load report (report.md + self-contained report.html + plots/) from a `ragbench load` results file.

Every figure comes from `load_point` records: throughput vs concurrency per batch size, latency vs
offered rate (service, scheduled, dispatch delay, and unsent requests), latency CDFs from the
stored HDR histograms, a batch x concurrency heatmap of texts/s, errors per class, TEI's
queue / tokenization / inference split, and the burst (Open WebUI ingestion) table.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

from bench.load import histograms
from bench.load.points import point_label
from bench.load.repeats import interval_text
from bench.report.end_status import run_status
from bench.report.labels import labels_sentence
from bench.report.load_plots import draw_plots
from bench.report.page import html_figure, html_table, md_figure, md_table
from bench.results.schema import LatencySummary, LoadPointRecord, Loop, PointStatus, Spread
from bench.results.store import Results

if TYPE_CHECKING:
    pass


def _ms(block: LatencySummary | None, key: str) -> str:
    return histograms.quantile_text(block, key, 2)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def points_table(points: list[LoadPointRecord]) -> tuple[list[str], list[list[str]]]:
    header = [
        "point",
        "req/s",
        "texts/s",
        "tokens/s (source)",
        "service p50/p99 ms",
        "scheduled p99/p99.9 ms",
        "dispatch p99 ms",
        "sent (scheduled)",
        "ok",
        "errors",
        "unsent",
        "status",
        "client cpu %",
        "of its ceiling",
        "saturated",
    ]
    rows = []
    for r in points:
        t, lat = r.throughput, r.latency_ms
        errors = ", ".join(f"{e.key} {e.count}" for e in sorted(r.error_counts, key=lambda e: e.key)) or "0"
        rows.append(
            [
                point_label(r, r.endpoint),
                f"{t.requests_per_s:.1f}",
                f"{t.texts_per_s:.1f}" + interval_text(r),  # `load --repeat N`: the interval, as on the terminal
                f"{t.tokens_per_s:.0f} ({t.tokens_source})" if t.tokens_source else "-",  # no answer: no tokens
                f"{_ms(lat.service, 'p50')} / {_ms(lat.service, 'p99')}",
                f"{_ms(lat.scheduled, 'p99')} / {_ms(lat.scheduled, 'p999')}",
                _ms(lat.dispatch_delay, "p99"),
                str(r.requests.sent) + (f" ({r.requests.scheduled})" if r.requests.scheduled is not None else ""),
                str(r.requests.ok),
                errors,
                str(r.requests.unsent),
                (r.status or "-") if r.status in (None, PointStatus.OK) else f"{r.status.upper()}: {r.problem}",
                f"{r.client.cpu_percent}",
                _share(r.client.utilization),
                "yes" if r.client.saturated else "no",
            ]
        )
    return header, rows


def burst_table(points: list[LoadPointRecord]) -> tuple[list[str], list[list[str]]]:
    header = [
        "endpoint",
        "texts",
        "batch",
        "concurrency",
        "requests",
        "time to drain s",
        "texts/s",
        "429",
        "other errors",
    ]
    rows = []
    for r in points:
        if r.loop != Loop.BURST:
            continue
        errors = dict(r.requests.errors)
        n429 = errors.pop("429", 0)
        rows.append(
            [
                r.endpoint,
                str(r.burst),
                str(r.batch),
                str(r.concurrency or "unlimited"),
                str(r.requests.sent),
                f"{r.duration_s:.3f}",
                f"{r.throughput.texts_per_s:.1f}",
                str(n429),
                ", ".join(f"{k} {v}" for k, v in sorted(errors.items())) or "0",
            ]
        )
    return header, rows


def server_table(points: list[LoadPointRecord]) -> tuple[list[str], list[list[str]]]:
    header = [
        "point",
        "queue p50/p99 ms",
        "tokenization p50/p99 ms",
        "inference p50/p99 ms",
        "te_request_count Δ",
        "te_request_failure Δ",
    ]
    rows = []
    for r in points:
        s = r.server_ms
        metrics = r.server_metrics["counters"] if r.server_metrics else {}
        count = sum(v for k, v in metrics.items() if k.startswith("te_request_count"))
        failures = sum(v for k, v in metrics.items() if k.startswith("te_request_failure"))
        split = [s.queue, s.tokenization, s.inference]
        if not any(split) and not metrics:
            continue
        rows.append(
            [
                point_label(r, r.endpoint),
                *(f"{_ms(q, 'p50')} / {_ms(q, 'p99')}" for q in split),
                f"{count:g}" if metrics else "-",
                f"{failures:g}" if metrics else "-",
            ]
        )
    return header, rows


def distributions_table(points: list[LoadPointRecord]) -> tuple[list[str], list[list[str]]]:
    """Each distribution a point drew from (`--lengths from:DATASET`, `--documents A..B` / `poisson:M`), once:
    the dataset's lengths and those sent, or the documents per request sent; quantiles as observed."""
    header = ["drawn", "from", "seed", "counted in", "source: n, mean, min / p10 / p50 / p90 / p99 / max"]
    header += ["sent: n, mean, min / p10 / p50 / p90 / p99 / max", "cut short"]
    rows: list[list[str]] = []
    for p in points:
        if (d := p.length_distribution) is not None:
            rows.append(
                ["text length", d.source, str(d.seed), d.unit, _spread(d.corpus), _spread(d.sent), str(d.clipped)]
            )
        if (c := p.documents_distribution) is not None:
            rows.append(["documents per request", c.spec, str(c.seed), "documents", "-", _spread(c.sent), "-"])
    unique = list({tuple(row): row for row in rows}.values())
    return header, unique


def _spread(s: Spread) -> str:
    return f"{s.n}, {s.mean:g}, {s.min} / {s.p10} / {s.p50} / {s.p90} / {s.p99} / {s.max}"


def intro_line(results: Results) -> str:
    """Where the points come from; a figure the header does not hold is left out, never written as `None`."""
    dataset, load = results.header.dataset_info, results.header.load or {}
    parts = [f"Created {results.header.created}"]
    if dataset.source:
        tokens = dataset.tokens_source
        parts.append(f"workload {dataset.source}" + (f" (token counts: {tokens})" if tokens else ""))
    parts.append(f"{load.get('workers') or 1} client worker(s)")
    if load.get("warmup_s") is not None:
        parts.append(f"warm-up {load['warmup_s']:g} s per point, excluded")
    return "; ".join(parts) + "." + labels_sentence(results.header)


def render(
    results: Results, out_dir: Path, kind: str = "load", answer: tuple[list[str], list[str]] = ([], [])
) -> tuple[str, str]:
    """The `kind` report's markdown and HTML body (bench.report writes them); plots/ written here. `answer`
    (markdown lines, HTML fragments: a size report's recommendation) comes first, before the points it rests on."""
    points = results.load_points
    plots = draw_plots(points, out_dir / "plots")
    status = run_status(results.end)
    tables = [
        ("Points", points_table(points)),
        ("Bursts (Open WebUI ingestion)", burst_table(points)),
        ("Server view (TEI headers and /metrics deltas)", server_table(points)),
        ("Distributions drawn (--lengths from:, --documents A..B / poisson:M)", distributions_table(points)),
    ]
    intro = intro_line(results)
    md = [f"# ragbench {kind} report", "", intro, "", f"Status: **{status.text}**", "", *answer[0]]
    html = [
        f"<h1>ragbench {kind} report</h1>",
        f"<p>{escape(intro)}</p>",
        f"<p class='{'' if status.complete else 'bad'}'>Status: {escape(status.text)}</p>",
        *answer[1],
    ]
    level = 2
    if answer[0]:  # the evidence under one heading, after the answer
        md += ["## Evidence: every measured point", ""]
        html.append("<h2>Evidence: every measured point</h2>")
        level = 3
    for title, (header, rows) in tables:
        if rows:
            md += [f"{'#' * level} {title}", "", md_table(header, rows), ""]
            html.append(f"<h{level}>{escape(title)}</h{level}>{html_table(header, rows)}")
    for title, path in plots:
        md += [f"{'#' * level} {title}", "", md_figure(title, path, out_dir), ""]
        html.append(f"<h{level}>{escape(title)}</h{level}>{html_figure(title, path)}")
    return "\n".join(md), "\n".join(html)
