"""`load --repeat N`: every point measured N times, interleaved (A, B, C, A, B, C, …) so that drift on a shared
machine falls on every point alike, then pooled into one `load_point` record that keeps its repeats.

The pooled record reads like a single longer measurement (counts summed, histograms merged exactly, rates
over the summed measured windows), so everything that reads one point reads it unchanged; `repeats` holds
each repeat's own figures and `intervals` the mean over the repeats with a 95% percentile-bootstrap interval
(seeded: the same repeats give the same interval everywhere). `compare` gates on the repeats
(bench/gate/noise.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import numpy as np
from hdrh.histogram import HdrHistogram

from bench.core.resample import CONFIDENCE, RESAMPLES, Interval, mean_interval, seeded_generator
from bench.load import histograms
from bench.load.points import PointConfig, Window, judge, point_label
from bench.load.quantities import LatencyQuantity, ServerQuantity, latency_block, server_times
from bench.results.schema import (
    Latencies,
    LatencyIntervals,
    LatencySummary,
    LoadPointRecord,
    LoadRequests,
    MetricHistogram,
    PointIntervals,
    PointRepeat,
    QuantileIntervals,
    ServerMetrics,
    Throughput,
    ThroughputIntervals,
)

# Repeat r of a point runs with seed + r * REPEAT_SEED_STRIDE: poisson/gamma gaps differ between repeats (their
# spread is part of the noise measured), and never coincide with another rate's seed (seed + i).
REPEAT_SEED_STRIDE = 1_000_000
Count = TypeVar("Count", int, float)  # errors per class are whole; TEI's counters are floats


def run_interleaved(
    points: list[PointConfig],
    repeat: int,
    measure: Callable[[int, int, PointConfig], LoadPointRecord],
    emit: Callable[[LoadPointRecord], None],
    seed: int,
    check: Callable[[LoadPointRecord], None] = lambda record: None,
) -> None:
    """`measure(round, index, point)` for every round and point in turn, `check` on each measurement (it may
    raise: a dead server); each point's record goes to `emit` once its repeats are measured. Measured once
    (`repeat` 1): emitted as it finishes. Whatever stops the rounds (Ctrl-C, a dead server),
    the points measured so far are emitted, pooled over the repeats they have: nothing measured is lost."""
    if repeat == 1:
        for index, point in enumerate(points):
            record = measure(0, index, point)
            emit(record)
            check(record)
        return
    measured: list[list[LoadPointRecord]] = [[] for _ in points]
    try:
        for round_ in range(repeat):
            for index, point in enumerate(points):
                again = replace(point, seed=point.seed + REPEAT_SEED_STRIDE * round_)
                measured[index].append(measure(round_, index, again))
                check(measured[index][-1])
    finally:
        for records in measured:
            if records:
                emit(pooled(records, seed))


def pooled(records: list[LoadPointRecord], seed: int, resamples: int = RESAMPLES) -> LoadPointRecord:
    """One record from a point's repeats: the pooled figures, each repeat's own, and their intervals."""
    first = records[0]
    open_loop = all(r.requests.scheduled is not None for r in records)  # each repeat's scheduled sends and window
    requests = LoadRequests(
        sent=sum(r.requests.sent for r in records),
        ok=sum(r.requests.ok for r in records),
        errors=_summed([r.requests.errors for r in records]),
        unsent=sum(r.requests.unsent for r in records),
        validated=sum(r.requests.validated for r in records),
        scheduled=sum(r.requests.scheduled or 0 for r in records) if open_loop else None,
        scheduled_s=sum(r.requests.scheduled_s or 0.0 for r in records) if open_loop else None,
    )
    merged = {
        q: histograms.merge([r.histograms.get(q) for r in records]) for q in {q for r in records for q in r.histograms}
    }
    window = Window(requests.scheduled_s, sum(r.duration_s for r in records))  # behind over the summed windows
    status, problem = judge(requests, first.max_error_rate if first.max_error_rate is not None else 0.0, window)
    repeats = [PointRepeat(r.duration_s, r.requests, r.throughput, r.latency_ms, r.status) for r in records]
    return replace(
        first,
        duration_s=round(sum(r.duration_s for r in records), 6),
        requests=requests,
        throughput=_pooled_throughput(records),
        latency_ms=Latencies(
            **{
                q: _summary(merged, q) if latency_block(first.latency_ms, q) is not None else None
                for q in LatencyQuantity
            }
        ),
        server_ms=server_times({q: _summary(merged, q) for q in ServerQuantity}),
        server_metrics=_summed_metrics([r.server_metrics for r in records]),
        client=max((r.client for r in records), key=lambda c: c.utilization or 0.0),
        histograms={q: histograms.encode(h) for q, h in merged.items() if h.get_total_count()},
        error_examples={cls: m for r in reversed(records) for cls, m in r.error_examples.items()},
        status=status,
        problem=problem,
        repeats=repeats,
        intervals=intervals(repeats, seeded_generator(seed, first.endpoint, point_label(first)), resamples),
    )


def _pooled_throughput(records: list[LoadPointRecord]) -> Throughput:
    """Rates over the summed measured windows: each repeat's count is its rate times its window."""
    seconds = sum(r.duration_s for r in records)

    def per_s(key: str) -> float:
        counted = sum(float(getattr(r.throughput, key) or 0.0) * r.duration_s for r in records)
        return counted / seconds if seconds else 0.0

    return Throughput(
        requests_per_s=per_s("requests_per_s"),
        texts_per_s=per_s("texts_per_s"),
        tokens_per_s=per_s("tokens_per_s"),
        tokens_source=next((r.throughput.tokens_source for r in records if r.requests.ok), None),
    )


def intervals(repeats: list[PointRepeat], rng: np.random.Generator, resamples: int = RESAMPLES) -> PointIntervals:
    """Mean and interval of texts/s, requests/s and each latency's p50 and p99 over the repeats; a latency
    that some repeat lacks (no successful request in it, or too few for the quantile) has no interval."""

    def over(values: list[float]) -> Interval:
        return mean_interval(values, rng, resamples)

    def quantiles(quantity: LatencyQuantity) -> QuantileIntervals | None:
        blocks = [latency_block(r.latency_ms, quantity) for r in repeats]
        p50 = [b.p50 for b in blocks if b is not None and b.p50 is not None]
        p99 = [b.p99 for b in blocks if b is not None and b.p99 is not None]
        if len(p99) < len(blocks) or len(p50) < len(blocks):  # a quantile some repeat lacks: no interval
            return None
        return QuantileIntervals(p50=over(p50), p99=over(p99))

    return PointIntervals(
        resamples=resamples,
        confidence=CONFIDENCE,
        repeats=len(repeats),
        throughput=ThroughputIntervals(
            texts_per_s=over([float(r.throughput.texts_per_s) for r in repeats]),
            requests_per_s=over([float(r.throughput.requests_per_s) for r in repeats]),
        ),
        latency_ms=LatencyIntervals(**{q: quantiles(q) for q in LatencyQuantity}),
    )


def interval_text(record: LoadPointRecord) -> str:
    """` (mean 412.0 [405.1, 418.3], 5 repeats)`: texts/s over a repeated point's repeats; "" for one measurement."""
    if record.intervals is None:
        return ""
    tput = record.intervals.throughput.texts_per_s
    return f" (mean {tput.mean:.1f} [{tput.low:.1f}, {tput.high:.1f}], {len(record.repeats)} repeats)"


def _summary(merged: dict[str, HdrHistogram], quantity: LatencyQuantity | ServerQuantity) -> LatencySummary | None:
    return histograms.summary_ms(merged[quantity]) if quantity in merged else None


def _summed(counts: list[dict[str, Count]]) -> dict[str, Count]:
    total: dict[str, Count] = {}
    for block in counts:
        for key, n in block.items():
            total[key] = total[key] + n if key in total else n
    return total


def _summed_metrics(deltas: list[ServerMetrics | None]) -> ServerMetrics | None:
    """TEI's /metrics deltas over every repeat: counters and histogram counts added, gauges as last read."""
    if not deltas or any(d is None for d in deltas):
        return None
    present = [d for d in deltas if d is not None]
    hists: dict[str, MetricHistogram] = {}
    for key in present[-1]["histograms"]:
        blocks = [d["histograms"][key] for d in present if key in d["histograms"]]
        count, total = sum(b["count"] for b in blocks), sum(b["sum"] for b in blocks)
        buckets = _summed([b["buckets"] for b in blocks])
        hists[key] = MetricHistogram(count=count, sum=total, mean=total / count if count else None, buckets=buckets)
    return ServerMetrics(
        counters=_summed([d["counters"] for d in present]),
        histograms=hists,
        gauges=dict(present[-1]["gauges"]),
    )
