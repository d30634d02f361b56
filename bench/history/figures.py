"""Each run's gated figures, one reader per command (quality, load and interleaved, identity, grow): the
(series, observation) pairs `read_history` collects into series (bench/history/series.py). What makes two runs'
figures one series is each reader's configuration text (see series.py's text)."""

from __future__ import annotations

from typing import Any

from bench.core.values import rate_text
from bench.history.observations import Busy, Found, Gate, Missing, Observation, Scale, Series, figure, finite
from bench.history.runs import HistoryRun
from bench.load.points import point_too_busy
from bench.results.schema import (
    QUALITY_COMMANDS,
    IdentityVerdict,
    LatencySummary,
    LoadPointRecord,
    Loop,
    Op,
    RunCommand,
    RungStatus,
    TargetRecord,
    TargetStatus,
)
from bench.results.schema.load import PairedFigureName
from bench.results.schema.run import spec_store
from bench.results.store import Results


def observations(run: HistoryRun, results: Results) -> Found:
    """The run's gated figures, by the command that wrote it; none for a command with none."""
    command = results.header.command
    if command in QUALITY_COMMANDS:
        return _quality(run, results)
    if results.load_points:
        return _load(run, results)
    if command == RunCommand.IDENTITY:
        return _identity(run, results)
    if command == RunCommand.GROW:
        return _grow(run, results)
    return []


# --- quality ----------------------------------------------------------------------------------------


def _quality(run: HistoryRun, results: Results) -> Found:
    header = results.header
    info = header.dataset_info
    dataset = info.name or "dataset"
    fingerprint = (info.fingerprint or "")[:12]
    found: Found = []
    for target in results.targets:
        if target.status != TargetStatus.OK:
            continue
        where = f"quality {dataset} ({fingerprint}) {target.name} [{target.spec}]"
        for metric in results.metrics:
            if metric.target != target.name:
                continue
            qids = tuple(sorted(metric.per_query))
            scores = tuple(float(metric.per_query[q]) for q in qids)
            label = header.measure_labels.get(metric.measure, metric.label)
            series = Series("quality", where, label, Gate.QUALITY, Scale.DIFFERENCE, True, metric.measure, qids)
            bad = next((v for v in (metric.mean, *scores) if isinstance(figure(v, Scale.DIFFERENCE), str)), None)
            if bad is not None:
                found.append((series, str(figure(bad, Scale.DIFFERENCE))))
                continue
            interval = finite(metric.ci_low), finite(metric.ci_high)
            found.append((series, Observation(run.index, metric.mean, scores, *interval, qids=qids)))
        found += _served(run, target, where)
    return found


def _served(run: HistoryRun, target: TargetRecord, where: str) -> Found:
    """A served target's cost figures: ingest texts/s (the corpus embedded through an endpoint), query p99."""
    found: Found = []
    served = [
        ("ingest texts/s", Gate.INGEST, True, target.cost_block("ingest").get("texts_per_s")),
        ("query p99 ms", Gate.QUERY_P99, False, target.latency_ms.get("p99")),
    ]
    for name, gate, higher, value in served:
        found_value = figure(value, Scale.RATIO)
        if found_value is not None:
            series = Series("quality", where, name, gate, Scale.RATIO, higher)
            found.append((series, found_value if isinstance(found_value, str) else Observation(run.index, found_value)))
    return found


# --- load -------------------------------------------------------------------------------------------


def point_configuration(p: LoadPointRecord) -> str:
    """A load point's endpoint, op and settings in words: what makes two runs' points one measurement."""
    size = f"docs {p.size_text}" if p.op == Op.RERANK else f"batch {p.size_text}"
    extra = "".join(
        f" {name} {value}"
        for name, value in (("len", p.length_text), ("cap", p.max_inflight), ("documents", p.documents))
        if value is not None
    )
    if p.loop == Loop.OPEN:
        how = f"open {size} {rate_text(p.rate) if p.rate is not None else '?'}/s {p.arrival}"
    elif p.loop == Loop.BURST:
        how = f"burst {p.burst} texts {size} conc {p.concurrency or 'unlimited'}"
    else:
        how = f"closed {size} conc {p.concurrency}"
    return f"load {p.endpoint} {p.op} {how}{extra}"


def _latency(block: LatencySummary | None, quantile: str) -> Any:
    return getattr(block, quantile) if block is not None else None


def _load(run: HistoryRun, results: Results) -> Found:
    found: Found = []
    for point in results.load_points:
        where = point_configuration(point)
        # the latency that counts: from the intended send in the open loop, send to last byte otherwise (compare's)
        quantity = "scheduled" if point.loop == Loop.OPEN else "service"
        measured = point.repeats if len(point.repeats) >= 2 else [point]
        intervals = point.intervals
        figures = [
            (
                "texts/s",
                Gate.THROUGHPUT,
                True,
                [r.throughput.texts_per_s for r in measured],
                point.throughput.texts_per_s,
                intervals.throughput.texts_per_s if intervals else None,
            )
        ]
        for quantile, gate in (("p50", Gate.P50), ("p99", Gate.P99)):
            values = [_latency(getattr(r.latency_ms, quantity), quantile) for r in measured]
            pooled = _latency(getattr(point.latency_ms, quantity), quantile)
            block = getattr(intervals.latency_ms, quantity) if intervals else None
            figures.append((f"{quantile} ms", gate, False, values, pooled, getattr(block, quantile, None)))
        busy = point_too_busy(point)
        for name, gate, higher, values, pooled, interval in figures:
            series = Series("load", where, name, gate, Scale.RATIO, higher)
            found += [(series, Busy(busy))] if busy else _load_observation(run, series, values, pooled, interval)
    return found + _paired(run, results)


def _paired(run: HistoryRun, results: Results) -> Found:
    """`load --interleave`: the paired ratio B ÷ A of each point as its own series, whose noise between runs is
    the paired noise; the rounds' ratios are its samples (as a point's repeats are), the paired interval its own."""
    found: Found = []
    for record in results.interleaved:
        where = f"load interleaved {record.current} ÷ {record.baseline} {record.point}"
        figures = {f.figure: f for f in record.figures}
        for key, name, gate in (
            (PairedFigureName.TEXTS_PER_S, "texts/s ratio", Gate.THROUGHPUT),
            (PairedFigureName.P99, "p99 ratio", Gate.P99),
        ):
            values = [getattr(r, f"{key}_ratio") for r in record.rounds]
            paired = figures.get(key)
            series = Series("load", where, name, gate, Scale.RATIO, key == PairedFigureName.TEXTS_PER_S)
            pooled, interval = (paired.ratio.mean, paired.ratio) if paired is not None else (None, None)
            found += _load_observation(run, series, values, pooled, interval)
    return found


def _load_observation(run: HistoryRun, series: Series, values: list[Any], pooled: Any, interval: Any) -> Found:
    """A load figure over its repeats; the pooled figure where a repeat lacks it (a p99 rests on 100 requests,
    which the point's pooled repeats may hold and no single repeat does); nothing where neither has it."""
    figures = [figure(v, series.scale) for v in values]
    bad = next((f for f in figures if isinstance(f, str)), None)
    if bad is not None:
        return [(series, bad)]
    samples = tuple(f for f in figures if isinstance(f, float))
    if len(samples) < len(figures):
        whole = figure(pooled, series.scale)
        if whole is None:
            if series.gate not in (Gate.THROUGHPUT, Gate.P99):
                return []
            return [(series, Missing("nothing answered, or too few requests for it even pooled over the repeats"))]
        return [(series, whole if isinstance(whole, str) else Observation(run.index, whole, (whole,)))]
    low, high = _bounds(interval) or (None, None)
    return [(series, Observation(run.index, sum(samples) / len(samples), samples, low, high))]


def _bounds(interval: Any) -> tuple[float, float] | None:
    if interval is None:
        return None
    low, high = finite(interval.low), finite(interval.high)
    return (low, high) if low is not None and high is not None else None


# --- identity ---------------------------------------------------------------------------------------

# The figures compare reads of each pair, and whether higher is better.
IDENTITY_FIGURES: dict[str, tuple[str, list[tuple[str, bool]]]] = {
    "identity_embed_pair": (
        "embed",
        [("cosine_min", True), ("cosine_mean", True), ("max_norm_diff", False), ("top10_overlap", True)],
    ),
    "identity_rerank_pair": ("rerank", [("max_score_diff", False), ("kendall_tau_mean", True)]),
}


def _identity(run: HistoryRun, results: Results) -> Found:
    found: Found = []
    for kind, (label, figures) in IDENTITY_FIGURES.items():
        for pair in results.of(kind):
            where = f"identity {label} {pair.a} vs {pair.b}"
            passed = 1.0 if pair.verdict == IdentityVerdict.PASS else 0.0
            verdict = Series("identity", where, "verdict (1 pass)", Gate.IDENTITY, Scale.DIFFERENCE, True)
            found.append((verdict, Observation(run.index, passed)))
            for name, higher in figures:
                value = finite(getattr(pair, name))
                if value is not None:
                    series = Series("identity", where, name, Gate.IDENTITY, Scale.DIFFERENCE, higher)
                    found.append((series, Observation(run.index, value)))
    return found


# --- grow -------------------------------------------------------------------------------------------


def _grow(run: HistoryRun, results: Results) -> Found:
    """Each measured rung of each target: a series per target and planned rung size (the header's `rungs`; with
    --unit chunks the measured size varies), its p50 and p99 ms, each measure and the ingest's docs/s."""
    header = results.header
    dataset = header.dataset.get("name", "dataset")
    fingerprint = str(header.dataset.get("fingerprint", ""))[:12]
    planned = (header.grow or {}).get("rungs") or []
    trec = {label: name for name, label in header.measure_labels.items()}
    found: Found = []
    for rung in (r for r in results.grow_rungs if r.status != RungStatus.FAILED):
        size = planned[rung.rung - 1] if 0 < rung.rung <= len(planned) else rung.size
        # A named target's store is the record's own (`store`): in the series' name, so that two stores are two series.
        named = rung.target if rung.store is None or spec_store(rung.target) else f"{rung.target}?store={rung.store}"
        where = f"grow {dataset} ({fingerprint}) {named} [{rung.kind}] rung {size:,} {rung.unit}"
        figures = [
            ("p50 ms", Gate.P50, Scale.RATIO, False, rung.latency_ms.get("p50"), None),
            ("p99 ms", Gate.QUERY_P99, Scale.RATIO, False, rung.latency_ms.get("p99"), None),
            ("ingest docs/s", Gate.INGEST, Scale.RATIO, True, rung.docs_per_s, None),
            *((label, Gate.QUALITY, Scale.DIFFERENCE, True, v, trec.get(label)) for label, v in rung.metrics.items()),
        ]
        for name, gate, scale, higher, value, measure in figures:
            number = figure(value, scale)
            if number is not None:
                series = Series("grow", where, name, gate, scale, higher, measure)
                found.append((series, number if isinstance(number, str) else Observation(run.index, number)))
    return found
