"""Sizing: from load points to an answer — the saturation rate under a latency SLO and the settings for it.

Plain functions over `load_point` records (LoadPointRecord); `ragbench size` feeds them points it
measures, the report reads them back from the results file. The steps:

1. `closed_sweep`: per batch size, concurrency 1, 2, 4, … until texts/s stops rising; the point with
   the best texts/s whose `service` p99 is under the SLO fixes the batch (and the client concurrency).
2. `saturation_search`: open-loop probes at that batch, each its own short measured point with its
   own warm-up: the rate grows ×2 from a start until a probe fails, then bisects between the last
   pass and the first failure. A probe passes when its `scheduled` p99 (intended send → last byte,
   so a stalled server cannot hide behind a slowed client) is under the SLO and its errors (unsent
   requests included) are under the error limit: the goodput criterion.
3. `recommend`: TEI and Open WebUI settings, replicas and cost, each line naming its points.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.load.points import error_rate as requests_error_rate
from bench.load.points import p99_ms, point_label, texts_per_s
from bench.results.schema import CeilingPoint, LoadPointRecord, Loop, SizingLine

TEI_DEFAULT_MAX_BATCH_TOKENS = 16384
TEI_DEFAULT_MAX_CONCURRENT_REQUESTS = 512
TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE = 32
GAIN_TO_CONTINUE = 0.05  # a closed-loop sweep goes on to the next concurrency while texts/s rises by 5% or more


@dataclass(frozen=True)
class Slo:
    p99_ms: float
    max_error_rate: float = 0.001


def error_rate(point: LoadPointRecord) -> float:
    """(errors + unsent) / (sent + unsent), as every command reads it (bench.load.points.error_rate)."""
    return requests_error_rate(point.requests)


def tokens_per_text(point: LoadPointRecord) -> float | None:
    texts = texts_per_s(point)
    tokens = point.throughput.tokens_per_s
    return tokens / texts if texts and tokens else None


def passes(point: LoadPointRecord, slo: Slo, quantity: str) -> bool:
    """p99 of `quantity` under the SLO and errors under the limit (goodput)."""
    p99 = p99_ms(point, quantity)
    return p99 is not None and p99 <= slo.p99_ms and error_rate(point) <= slo.max_error_rate


# --- 1. closed loop ---------------------------------------------------------------------------------


def closed_sweep(
    measure: Callable[[int, int], LoadPointRecord], batches: list[int], max_concurrency: int, slo: Slo
) -> list[LoadPointRecord]:
    """Per batch, concurrency 1, 2, 4, … ≤ max_concurrency, until texts/s gains < 5% or errors pass the limit."""
    points: list[LoadPointRecord] = []
    for batch in batches:
        best = 0.0
        concurrency = 1
        while concurrency <= max_concurrency:
            point = measure(batch, concurrency)
            points.append(point)
            if error_rate(point) > slo.max_error_rate or texts_per_s(point) < best * (1 + GAIN_TO_CONTINUE):
                break
            best = texts_per_s(point)
            concurrency *= 2
    return points


@dataclass
class ClosedChoice:
    peak: LoadPointRecord | None  # best texts/s with errors under the limit, latency aside: the server's throughput
    best: LoadPointRecord | None  # best texts/s whose service p99 is under the SLO: fixes batch and concurrency


def choose_closed(points: list[LoadPointRecord], slo: Slo) -> ClosedChoice:
    closed = [p for p in points if p.loop == Loop.CLOSED and error_rate(p) <= slo.max_error_rate]
    within = [p for p in closed if passes(p, slo, "service")]
    return ClosedChoice(
        peak=max(closed, key=texts_per_s, default=None), best=max(within, key=texts_per_s, default=None)
    )


# --- 2. open loop: the saturation rate --------------------------------------------------------------


@dataclass
class Probe:
    rate: float  # offered requests/s
    point: LoadPointRecord  # the measurement whose verdict is the probe's (the last one taken)
    passed: bool
    # A probe that failed is measured again before the search moves down (one unlucky probe on a busy machine
    # capped the saturation rate 33% low), and when the two disagree a third decides: `earlier` holds the
    # measurements before `point`, in order (empty: measured once).
    earlier: list[LoadPointRecord] = field(default_factory=list)

    @property
    def measured(self) -> int:
        return len(self.earlier) + 1


@dataclass
class Saturation:
    rate: float | None  # highest passing offered rate (requests/s); None: no probed rate met the SLO
    point: LoadPointRecord | None  # the probe at that rate
    first_failure: float | None  # lowest failing rate above it (None: never failed: the search hit its probe limit)
    probes: list[Probe] = field(default_factory=list)


def judge_probe(measure: Callable[[float], LoadPointRecord], rate: float, slo: Slo) -> Probe:
    """One probe's verdict: the goodput criterion on its `scheduled` p99 and errors. A failing probe is measured
    once more; when the second measurement passes, a third decides — the majority of three, so that a rate
    whose verdict flips with the neighbours' load is judged by what it does most often, not by whichever
    measurement came last (which passed a rate that fails two times in three half the time). The search and
    any sweep it is checked against (benchmarks/bench_sizing.py) judge a rate by this one function."""
    points = [measure(rate)]
    verdicts = [passes(points[0], slo, "scheduled")]
    while not verdicts[0] and len(points) < 3 and verdicts.count(False) < 2:
        points.append(measure(rate))
        verdicts.append(passes(points[-1], slo, "scheduled"))
    return Probe(rate, points[-1], verdicts[-1], earlier=points[:-1])


def saturation_search(
    measure: Callable[[float], LoadPointRecord],
    start_rate: float,
    slo: Slo,
    tolerance: float = 0.05,
    max_probes: int = 12,
    growth: float = 2.0,
    min_rate: float = 0.01,
) -> Saturation:
    """Grow ×`growth` from `start_rate` until a probe fails (or shrink until one passes), then bisect
    until the failing rate is within `tolerance` of the passing one, or `max_probes` are spent. A failing
    probe is re-measured (`judge_probe`; not counted against `max_probes`)."""
    probes: list[Probe] = []

    def probe(rate: float) -> bool:
        probes.append(judge_probe(measure, rate, slo))
        return probes[-1].passed

    good: float | None = None
    bad: float | None = None
    rate = start_rate
    if probe(rate):
        good = rate
        while len(probes) < max_probes:
            rate *= growth
            if not probe(rate):
                bad = rate
                break
            good = rate
    else:
        bad = rate
        while len(probes) < max_probes and rate / growth >= min_rate:
            rate /= growth
            if probe(rate):
                good = rate
                break
            bad = rate
    while good is not None and bad is not None and (bad - good) / good > tolerance and len(probes) < max_probes:
        mid = (good + bad) / 2
        if probe(mid):
            good = mid
        else:
            bad = mid
    chosen = next((p for p in probes if p.rate == good and p.passed), None)
    return Saturation(rate=good, point=chosen.point if chosen else None, first_failure=bad, probes=probes)


def remeasured_text(probes: list[Probe]) -> str:
    """`; re-measured after failing: 40/s (failed again), 30/s (passed, then failed), 20/s (passed twice)`, or ""
    when no probe failed."""
    again = [f"{p.rate:g}/s ({_remeasure_outcome(p)})" for p in probes if p.earlier]
    return f"; re-measured after failing: {', '.join(again)}" if again else ""


def _remeasure_outcome(probe: Probe) -> str:
    if probe.measured == 2:
        return "failed again"
    return "passed twice" if probe.passed else "passed, then failed"


# --- 3. recommendation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Economics:
    target_rps: float | None = None  # requests/s at the sized batch
    gpu_hourly_usd: float | None = None


NO_ECONOMICS = Economics()  # no target rate, no GPU price: no economics lines


def pow2_at_least(value: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(value, 1.0))))


def choose_burst(points: list[LoadPointRecord], slo: Slo) -> LoadPointRecord | None:
    """Open WebUI's ingestion: the (batch, concurrency) that drains a file fastest without errors (429 included)."""
    clean = [p for p in points if p.loop == Loop.BURST and error_rate(p) <= slo.max_error_rate]
    # Fastest drain first; among equals (within 2%) the lower concurrency, which leaves the server room for queries.
    best = max(clean, key=texts_per_s, default=None)
    if best is None:
        return None
    near = [p for p in clean if texts_per_s(p) >= 0.98 * texts_per_s(best)]
    return min(near, key=lambda p: (p.concurrency or math.inf, -texts_per_s(p)))


def ceiling_for(ceiling: list[CeilingPoint], point: LoadPointRecord) -> CeilingPoint | None:
    """The in-process ceiling on the same op and text length: its best batch."""
    same = [c for c in ceiling if c.op == point.op and c.length == point.length]
    return max(same, key=lambda c: c.texts_per_s, default=None)


def recommend(
    points: list[LoadPointRecord],
    saturation: Saturation | None,
    slo: Slo,
    economics: Economics = NO_ECONOMICS,
    ceiling: list[CeilingPoint] | None = None,
) -> list[SizingLine]:
    """Every line of the answer, each with the points it comes from; lines that lack data say what is missing."""
    choice = choose_closed(points, slo)
    burst = choose_burst(points, slo)
    best = choice.best
    sat_point = saturation.point if saturation else None
    lines = [_batch_line(best, points, slo)]
    if saturation is not None:
        lines.append(_saturation_line(saturation, slo))
    lines += _tei_lines(best, sat_point, burst)
    lines += _openwebui_lines(burst, points)
    lines += _economics_lines(saturation, sat_point, economics)
    if ceiling is not None:
        lines.append(_ceiling_line(choice.peak, ceiling))
    return lines


def _batch_line(best: LoadPointRecord | None, points: list[LoadPointRecord], slo: Slo) -> SizingLine:
    if best is None:
        return SizingLine(
            "batch / concurrency",
            "none meets the SLO",
            f"no closed-loop point had service p99 ≤ {slo.p99_ms:g} ms with errors ≤ {slo.max_error_rate:g}",
            [point_label(p) for p in points if p.loop == Loop.CLOSED],
        )
    return SizingLine(
        "client batch / concurrency",
        f"{best.batch} / {best.concurrency}",
        f"best texts/s ({texts_per_s(best):.1f}) with service p99 {p99_ms(best, 'service'):.1f} ms ≤ {slo.p99_ms:g} ms",
        [point_label(best)],
    )


def _saturation_line(saturation: Saturation, slo: Slo) -> SizingLine:
    sat_point = saturation.point
    if sat_point is None:
        return SizingLine(
            "saturation rate",
            "none",
            f"no probed rate kept scheduled p99 ≤ {slo.p99_ms:g} ms with errors ≤ {slo.max_error_rate:g}"
            + remeasured_text(saturation.probes),
            [point_label(p.point) for p in saturation.probes],
        )
    bound = (
        f"; {saturation.first_failure:g}/s failed"
        if saturation.first_failure is not None
        else "; no failing rate found within the probe limit (a lower bound)"
    ) + remeasured_text(saturation.probes)
    return SizingLine(
        "saturation rate (goodput)",
        f"{saturation.rate:g} requests/s = {texts_per_s(sat_point):.1f} texts/s",
        f"highest rate with scheduled p99 {p99_ms(sat_point, 'scheduled'):.1f} ms ≤ {slo.p99_ms:g} ms, "
        f"errors {error_rate(sat_point):.2%}{bound}",
        [point_label(sat_point)],
    )


def _tei_lines(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    sources = [p for p in (best, burst) if p is not None]
    if sources:
        largest = max(p.batch for p in sources)
        lines.append(
            SizingLine(
                "TEI --max-client-batch-size",
                str(max(largest, 1)),
                "the largest batch a client sends (sized batch, Open WebUI's batch); TEI answers 422 above it "
                f"(default {TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE})",
                [point_label(p) for p in sources],
            )
        )
    concurrent = _concurrent_requests_line(best, sat, burst)
    tokens = _batch_tokens_line(sat)
    return lines + [line for line in (concurrent, tokens) if line is not None]


def _concurrent_requests_line(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None
) -> SizingLine | None:
    # Inputs in flight: since TEI 1.9 each input holds one permit of --max-concurrent-requests, taken
    # without waiting, so fewer permits than inputs in flight means 429s (../shared/contracts).
    in_flight: list[tuple[float, str, LoadPointRecord]] = []
    if best is not None:
        in_flight.append((best.batch * (best.concurrency or 1), "closed-loop users × batch", best))
    if sat is not None:
        seconds = p99_ms(sat, "scheduled") / 1000.0
        in_flight.append((sat.rate * sat.batch * seconds, "rate × batch × p99 (Little's law)", sat))
    if burst is not None:
        requests = math.ceil(burst.burst / burst.batch)
        cap = burst.concurrency or requests
        in_flight.append((min(cap, requests) * burst.batch, "Open WebUI's requests in flight × batch", burst))
    if not in_flight:
        return None
    need, how, point = max(in_flight, key=lambda t: t[0])
    value = max(TEI_DEFAULT_MAX_CONCURRENT_REQUESTS, pow2_at_least(need))
    return SizingLine(
        "TEI --max-concurrent-requests",
        str(value),
        f"≥ {need:.0f} inputs in flight ({how}), a power of two, at least TEI's default "
        f"{TEI_DEFAULT_MAX_CONCURRENT_REQUESTS}; since TEI 1.9 every input takes a permit",
        [point_label(p) for _, _, p in in_flight],
    )


def _batch_tokens_line(sat: LoadPointRecord | None) -> SizingLine | None:
    tokens = tokens_per_text(sat) if sat is not None else None
    if sat is None or not tokens or sat.latency_ms.scheduled is None or sat.rate is None:
        return None
    mean_s = sat.latency_ms.scheduled.mean / 1000.0
    waiting = sat.rate * sat.batch * mean_s * tokens  # Little's law: mean inputs in the server × tokens each
    value = max(TEI_DEFAULT_MAX_BATCH_TOKENS, pow2_at_least(waiting))
    return SizingLine(
        "TEI --max-batch-tokens",
        str(value),
        f"the {waiting:.0f} tokens in the server on average at the saturation rate fit one forward "
        f"batch ({tokens:.0f} tokens/text); derived, not measured on TEI at this setting",
        [point_label(sat)],
    )


def _openwebui_lines(burst: LoadPointRecord | None, points: list[LoadPointRecord]) -> list[SizingLine]:
    bursts = [p for p in points if p.loop == Loop.BURST]
    if burst is None:
        why = "no burst point finished without errors" if bursts else "no burst workload was measured"
        return [
            SizingLine(
                "Open WebUI RAG_EMBEDDING_BATCH_SIZE / RAG_EMBEDDING_CONCURRENT_REQUESTS",
                "not determined",
                why,
                [point_label(p) for p in bursts],
            )
        ]
    drain = burst.duration_s
    return [
        SizingLine(
            "Open WebUI RAG_EMBEDDING_BATCH_SIZE",
            str(burst.batch),
            f"a {burst.burst}-chunk file drained in {drain:.2f} s ({texts_per_s(burst):.1f} texts/s), the fastest "
            "without errors or 429s",
            [point_label(burst)],
        ),
        SizingLine(
            "Open WebUI RAG_EMBEDDING_CONCURRENT_REQUESTS",
            str(burst.concurrency or 0),
            ("0 = unlimited; " if not burst.concurrency else "") + "the cap of that burst",
            [point_label(burst)],
        ),
    ]


def _economics_lines(
    saturation: Saturation | None, sat: LoadPointRecord | None, economics: Economics
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    if sat is None:
        if economics.target_rps or economics.gpu_hourly_usd:
            lines.append(SizingLine("replicas / cost", "not determined", "no saturation rate under the SLO", []))
        return lines
    if economics.target_rps:
        replicas = math.ceil(economics.target_rps / saturation.rate)
        lines.append(
            SizingLine(
                "replicas for --target-rps",
                str(replicas),
                f"{economics.target_rps:g} requests/s ÷ {saturation.rate:g} requests/s per replica at the SLO",
                [point_label(sat)],
            )
        )
    if economics.gpu_hourly_usd:
        per_text = economics.gpu_hourly_usd / (texts_per_s(sat) * 3600.0)
        lines.append(
            SizingLine(
                "cost per 1M texts",
                f"${per_text * 1e6:.4f}",
                f"${economics.gpu_hourly_usd:g}/h at {texts_per_s(sat):.1f} texts/s (the saturation rate)",
                [point_label(sat)],
            )
        )
        tokens = tokens_per_text(sat)
        if tokens:
            lines.append(
                SizingLine(
                    "cost per 1M tokens",
                    f"${per_text / tokens * 1e6:.4f}",
                    f"{tokens:.1f} tokens/text ({sat.throughput.tokens_source})",
                    [point_label(sat)],
                )
            )
    return lines


def _ceiling_line(peak: LoadPointRecord | None, ceiling: list[CeilingPoint]) -> SizingLine:
    if peak is None:
        return SizingLine(
            "fraction of the in-process ceiling", "not determined", "no closed-loop point without errors", []
        )
    top = ceiling_for(ceiling, peak)
    if top is None:
        lengths = sorted({c.length for c in ceiling if c.op == peak.op})
        return SizingLine(
            "fraction of the in-process ceiling",
            "not determined",
            f"the ceiling has no {peak.op} point at length {peak.length} (it has {lengths})",
            [point_label(peak)],
        )
    return SizingLine(
        "fraction of the in-process ceiling",
        f"{texts_per_s(peak) / top.texts_per_s:.1%}",
        f"server's best {texts_per_s(peak):.1f} texts/s ÷ in-process {top.texts_per_s:.1f} texts/s "
        f"({top.device_name}, {top.dtype})",
        [point_label(peak), f"ceiling {top.op} batch={top.batch} len={top.length} {top.dtype}"],
    )
