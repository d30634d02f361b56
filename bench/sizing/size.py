"""Sizing: from load points to an answer — the saturation rate under a latency SLO and the settings for it.

Plain functions over `load_point` records (LoadPointRecord); `ragbench size` feeds them points it
measures, the report reads them back from the results file. The steps:

1. `closed_sweep`: per batch size, concurrency 1, 2, 4, … until texts/s stops rising; the batch is the one
   that serves the most texts/s *at the SLO* (`slo_texts_per_s`: its requests/s less what queueing under random
   arrivals needs, not its raw texts/s), its concurrency the point with the best texts/s under the SLO.
2. `saturation_search`: open-loop probes at that batch, each its own short measured point with its
   own warm-up: the rate grows ×2 from a start until a probe fails, then bisects between the last
   pass and the first failure. A probe passes when its `scheduled` p99 (intended send → last byte,
   so a stalled server cannot hide behind a slowed client) is under the SLO and its errors (unsent
   requests included) are under the error limit: the goodput criterion.
3. `recommend`: TEI and Open WebUI settings, replicas and cost, each line naming its points.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scipy.stats import binom

from bench.load.points import error_rate as requests_error_rate
from bench.load.points import order_statistic_ms, percentile_ms, point_label, recorded_us, texts_per_s
from bench.results.schema import CeilingPoint, LoadPointRecord, Loop, SizingLine

TEI_DEFAULT_MAX_BATCH_TOKENS = 16384
TEI_DEFAULT_MAX_CONCURRENT_REQUESTS = 512
TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE = 32
GAIN_TO_CONTINUE = 0.05  # a closed-loop sweep goes on to the next concurrency while texts/s rises by 5% or more
CONFIDENCE = 0.95  # of a probe's order-statistic interval for its percentile
# Measurements the search expects per probe: a failing probe is measured again (judge_probe), about half fail.
MEASUREMENTS_PER_PROBE = 1.5
# Achieved requests/s at one offered rate falling by more than this (and by more than 3 Poisson standard deviations
# of the two counts) between two measurements: the server's capacity changed between them.
CAPACITY_DROP = 0.10


@dataclass(frozen=True)
class Slo:
    ms: float  # the latency the percentile must stay under
    max_error_rate: float = 0.001
    percentile: float = 99.0  # `--slo p95=800ms`; `--slo-p99 MS` is p99

    @property
    def name(self) -> str:
        return f"p{self.percentile:g}"

    def text(self) -> str:
        return f"{self.name} ≤ {sig3(self.ms)} ms"


def sig3(value: float) -> str:
    """A figure to 3 significant digits (7.89366 -> 7.89, 146.1 -> 146, 12345 -> 12,300, 20.0 -> 20), no exponent."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = 2 - math.floor(math.log10(abs(value)))
    shown = f"{round(value, digits):,.{max(digits, 0)}f}"
    return shown.rstrip("0").rstrip(".") if "." in shown else shown  # 20.0 -> 20: trailing zeros hold nothing


@dataclass(frozen=True)
class Verdict:
    """What a probe's percentile rests on: the requests it comes from and its distribution-free interval."""

    requests: int
    value_ms: float | None
    low_ms: float | None  # None: too few requests to bound it below
    high_ms: float | None  # None: too few requests to bound it above (the slowest request is the estimate)

    def text(self, slo: Slo, quantity: str) -> str:
        """`scheduled p99 1,230 ms from 412 requests (95% interval 1,100 ms to 1,400 ms)`, saying when n is too
        small."""
        if self.value_ms is None:
            return f"{quantity} {slo.name}: no successful request"
        low = f"{sig3(self.low_ms)} ms" if self.low_ms is not None else "unbounded"
        high = f"{sig3(self.high_ms)} ms" if self.high_ms is not None else "unbounded"
        shown = f"{quantity} {slo.name} {sig3(self.value_ms)} ms from {self.requests} requests"
        interval = f"{CONFIDENCE:.0%} interval {low} to {high}"
        if self.high_ms is None:
            return (
                f"{shown} ({interval}: too few for a {slo.name} to mean much, it is about their slowest; "
                f"{requests_to_bound(slo.percentile)} would bound it)"
            )
        return f"{shown} ({interval})"


def requests_to_bound(percentile: float, confidence: float = CONFIDENCE) -> int:
    """Fewest requests whose slowest one bounds the percentile from above at `confidence` (two-sided):
    q^n ≤ (1 − confidence)/2."""
    q = percentile / 100.0
    return math.ceil(math.log((1 - confidence) / 2) / math.log(q))


def order_ranks(n: int, percentile: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the distribution-free interval X(l) ≤ ξ_q ≤ X(u) for the q-quantile from n samples:
    the binomial B(n, q) count of samples under ξ_q lies in [l, u−1] with probability ≥ `confidence`; None where
    n is too small to reach that end."""
    q, tail = percentile / 100.0, (1 - confidence) / 2
    low = int(binom.ppf(tail, n, q))  # P(B ≤ low−1) ≤ tail ⇒ X(low) ≤ ξ_q with probability ≥ 1 − tail
    while low >= 1 and binom.cdf(low - 1, n, q) > tail:
        low -= 1
    high = int(binom.ppf(1 - tail, n, q)) + 1  # P(B ≤ high−1) ≥ 1 − tail ⇒ ξ_q ≤ X(high)
    return (low if low >= 1 else None), (high if high <= n else None)


def verdict(point: LoadPointRecord, quantity: str, slo: Slo) -> Verdict:
    buckets = recorded_us(point, quantity)
    block = getattr(point.latency_ms, quantity)
    n = sum(count for _, count in buckets) if buckets else (block.count if block is not None else 0)
    value = percentile_ms(point, quantity, slo.percentile)
    if not buckets or not n:
        return Verdict(n, value, None, None)
    low, high = order_ranks(n, slo.percentile)
    return Verdict(
        n,
        value,
        order_statistic_ms(buckets, low) if low is not None else None,
        order_statistic_ms(buckets, high) if high is not None else None,
    )


def error_rate(point: LoadPointRecord) -> float:
    """(errors + unsent) / (sent + unsent), as every command reads it (bench.load.points.error_rate)."""
    return requests_error_rate(point.requests)


def tokens_per_text(point: LoadPointRecord) -> float | None:
    texts = texts_per_s(point)
    tokens = point.throughput.tokens_per_s
    return tokens / texts if texts and tokens else None


def passes(point: LoadPointRecord, slo: Slo, quantity: str) -> bool:
    """The SLO's percentile of `quantity` under its latency and errors under the limit (goodput)."""
    value = percentile_ms(point, quantity, slo.percentile)
    return value is not None and value <= slo.ms and error_rate(point) <= slo.max_error_rate


class BudgetSpent(Exception):
    """The `--max-time` budget cannot hold the next measurement: the search ends with what it has."""


class Budget:
    """The time a whole `size` run may take (None: no limit), against a monotonic clock; `reserve_s` of it is kept
    for what follows the last measurement (the recommendation and the report: 14 s for 20 points on a busy
    2-core machine)."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic, reserve_s: float = 0.0):
        self.seconds, self.clock, self.reserve_s = seconds, clock, reserve_s
        self.started = clock()

    @property
    def spent(self) -> float:
        return self.clock() - self.started

    def left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.reserve_s - self.spent

    def require(self, seconds: float) -> None:
        """Raise BudgetSpent unless `seconds` more fit in the budget."""
        if seconds > self.left():
            raise BudgetSpent(f"the {sig3(self.seconds or 0)} s budget (--max-time) was spent")


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
    best: LoadPointRecord | None  # the chosen batch's best texts/s under the SLO: fixes batch and concurrency
    # per batch with a point under the SLO: (its best point, texts/s expected at the SLO), best first
    ranked: list[tuple[LoadPointRecord, float]] = field(default_factory=list)


def slo_texts_per_s(point: LoadPointRecord, slo: Slo) -> float:
    """Texts/s a batch can be offered at the SLO under random arrivals, from a closed-loop point: a queue's
    response-time percentile is about ln(1/(1−q)) × its mean, an M/M/1 queue's mean is 1/(μ−λ) and a deterministic
    server's half that (Pollaczek–Khinchine), so λ ≤ μ − ln(1/(1−q))/(2·SLO) requests/s. A rough model, used only to
    rank batches: a large batch whose requests take a good part of the SLO leaves little room for queueing, however
    many texts/s it reaches with the queue kept full."""
    queueing = math.log(1 / (1 - slo.percentile / 100.0)) / (2 * slo.ms / 1000.0)
    return max(0.0, point.throughput.requests_per_s - queueing) * point.batch


def choose_closed(points: list[LoadPointRecord], slo: Slo) -> ClosedChoice:
    closed = [p for p in points if p.loop == Loop.CLOSED and error_rate(p) <= slo.max_error_rate]
    within = [p for p in closed if passes(p, slo, "service")]
    per_batch = [max((p for p in within if p.batch == b), key=texts_per_s) for b in sorted({p.batch for p in within})]
    # The most texts/s at the SLO; among batches the queueing model leaves none, the most raw texts/s.
    ranked = sorted(((p, slo_texts_per_s(p, slo)) for p in per_batch), key=lambda t: (-t[1], -texts_per_s(t[0])))
    return ClosedChoice(
        peak=max(closed, key=texts_per_s, default=None), best=ranked[0][0] if ranked else None, ranked=ranked
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
    # The answer's rate measured once more after the search (`saturation_search(confirm=True)`): a capacity that
    # changed while the server was probed shows as this failing, or answering less; it does not change the verdict.
    confirmation: LoadPointRecord | None = None

    @property
    def measured(self) -> int:
        return len(self.earlier) + 1


@dataclass
class Saturation:
    rate: float | None  # highest passing offered rate (requests/s); None: no probed rate met the SLO
    point: LoadPointRecord | None  # the probe at that rate
    first_failure: float | None  # lowest failing rate above it (None: never failed: the search hit its probe limit)
    probes: list[Probe] = field(default_factory=list)
    # why `rate` is only a lower bound: the search ended early (budget, signal) or never found a failing rate
    lower_bound: str | None = None
    capacity_changes: list[str] = field(default_factory=list)  # capacity_changes(probes)


def saturation_from(probes: list[Probe], stopped: str | None = None, slo: Slo | None = None) -> Saturation:
    """The answer the probes give: the highest passing rate and the lowest failing one above it; `stopped` says
    why the search ended before it was done (then the rate is a lower bound, as when no rate failed); `slo` judges
    the answer's confirmation, if it was measured."""
    passed = [p for p in probes if p.passed]
    best = max(passed, key=lambda p: p.rate, default=None)
    above = [p.rate for p in probes if not p.passed and (best is None or p.rate > best.rate)]
    first_failure = min(above, default=None)
    lower_bound = stopped
    if lower_bound is None and best is not None and first_failure is None:
        lower_bound = "no failing rate found within the probe limit"
    return Saturation(
        rate=best.rate if best else None,
        point=best.point if best else None,
        first_failure=first_failure,
        probes=list(probes),
        lower_bound=lower_bound if best is not None else stopped,
        capacity_changes=capacity_changes(probes, slo),
    )


def judge_probe(
    measure: Callable[[float], LoadPointRecord], rate: float, slo: Slo, into: list[Probe] | None = None
) -> Probe:
    """One probe's verdict: the goodput criterion on its `scheduled` percentile and errors. A failing probe is
    measured once more; when the second measurement passes, a third decides — the majority of three, so that a
    rate whose verdict flips with the neighbours' load is judged by what it does most often, not by whichever
    measurement came last (which passed a rate that fails two times in three half the time). The search and
    any sweep it is checked against (benchmarks/bench_sizing.py) judge a rate by this one function. With `into`,
    the probe is appended after its first measurement and updated with each re-measure, so a stop in between
    keeps what was measured."""
    first = measure(rate)
    probe = Probe(rate, first, passes(first, slo, "scheduled"))
    if into is not None:
        into.append(probe)
    verdicts = [probe.passed]
    while not verdicts[0] and probe.measured < 3 and verdicts.count(False) < 2:
        again = measure(rate)
        verdicts.append(passes(again, slo, "scheduled"))
        probe.earlier.append(probe.point)
        probe.point, probe.passed = again, verdicts[-1]
    return probe


def measurements_left(good: float | None, bad: float | None, tolerance: float, growth: float, probes_left: int) -> int:
    """Measurements the search still expects, this one included: until a rate fails (or passes) one more probe,
    then a bisection halving the gap to `tolerance`; a failing probe measured again about half the time."""
    gap = (bad - good) / good if good is not None and bad is not None else growth - 1
    probes = (0 if good is not None and bad is not None else 1) + max(0, math.ceil(math.log2(gap / tolerance)))
    return max(1, math.ceil(min(probes, probes_left) * MEASUREMENTS_PER_PROBE))


def saturation_search(
    measure: Callable[[float], LoadPointRecord],
    start_rate: float,
    slo: Slo,
    tolerance: float = 0.05,
    max_probes: int = 12,
    growth: float = 2.0,
    min_rate: float = 0.01,
    probes: list[Probe] | None = None,
    outlook: Callable[[int], None] = lambda measurements: None,
    confirm: bool = True,
) -> Saturation:
    """Grow ×`growth` from `start_rate` until a probe fails (or shrink until one passes), then bisect
    until the failing rate is within `tolerance` of the passing one, or `max_probes` are spent. A failing
    probe is re-measured (`judge_probe`; not counted against `max_probes`). The probes go into `probes` (the
    caller's list, kept when a budget or a signal stops the search); before each, `outlook` hears how many
    measurements the search still expects (the caller sizes its probes and its time estimate by it). With
    `confirm`, the answer's rate is measured once more at the end, when the budget allows: a failure or a fall in
    achieved throughput then is a capacity change between probes (`capacity_changes`)."""
    probes = [] if probes is None else probes
    good: float | None = None
    bad: float | None = None

    def probe(rate: float) -> bool:
        outlook(measurements_left(good, bad, tolerance, growth, max_probes - len(probes)))
        return judge_probe(measure, rate, slo, into=probes).passed

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
    answer = next((p for p in probes if p.rate == good and p.passed), None)
    if confirm and answer is not None and len(probes) > 1:
        try:
            outlook(1)
            answer.confirmation = measure(answer.rate)
        except BudgetSpent:  # the answer stands; only its check did not fit
            pass
    return saturation_from(probes, slo=slo)


def capacity_changes(probes: list[Probe], slo: Slo | None = None) -> list[str]:
    """Signs that the server's capacity changed while it was probed (another tenant, a throttled GPU): the answer's
    rate failing when measured again at the end (judged by `slo`), or a measurement whose achieved requests/s fell
    well below the one before it at the same offered rate (by more than CAPACITY_DROP and 3 Poisson deviations).
    A re-measure that flips (failed, passed, failed) is the majority rule's business, said by `remeasured_text`:
    at a rate on the SLO's edge it is noise."""
    found: list[str] = []
    for probe in probes:
        if probe.confirmation is not None and slo is not None and not passes(probe.confirmation, slo, "scheduled"):
            found.append(
                f"{sig3(probe.rate)} requests/s offered passed, then failed when measured again at the end (the "
                "capacity changed, or the rate sits on the SLO's edge)"
            )
        measured = [*probe.earlier, probe.point, *([probe.confirmation] if probe.confirmation else [])]
        for before, after in itertools.pairwise(measured):
            drop = _throughput_drop(before, after)
            if drop is not None:
                found.append(
                    f"at {sig3(probe.rate)} requests/s offered, the achieved rate fell from "
                    f"{sig3(before.throughput.requests_per_s)} to {sig3(after.throughput.requests_per_s)} "
                    f"requests/s ({drop:.0%} less)"
                )
    return found


def _throughput_drop(before: LoadPointRecord, after: LoadPointRecord) -> float | None:
    """The fall of achieved requests/s from `before` to `after`, when past CAPACITY_DROP and Poisson noise."""
    r1, r2 = before.throughput.requests_per_s, after.throughput.requests_per_s
    t1, t2 = before.duration_s, after.duration_s
    if r1 <= 0 or t1 <= 0 or t2 <= 0:
        return None
    noise = 3 * math.sqrt(r1 / t1 + r2 / t2)  # the deviation of a difference of two Poisson rates
    fall = r1 - r2
    return fall / r1 if fall > CAPACITY_DROP * r1 and fall > noise else None


def remeasured_text(probes: list[Probe]) -> str:
    """`; re-measured after failing: 40/s (failed again), 30/s (passed, then failed), 20/s (passed twice)`, or ""
    when no probe failed."""
    again = [f"{sig3(p.rate)}/s ({_remeasure_outcome(p)})" for p in probes if p.earlier]
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
    target_texts_per_s: float | None = None  # the target in texts/s (any one of the three targets)
    target_tokens_per_s: float | None = None  # ... or in tokens/s


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
    lines = [_batch_line(choice, points, slo)]
    if saturation is not None:
        lines += _saturation_lines(saturation, slo)
    lines += _tei_lines(best, sat_point, burst, slo)
    lines += _openwebui_lines(burst, points)
    lines += _economics_lines(saturation, sat_point, economics)
    if ceiling is not None:
        lines.append(_ceiling_line(choice.peak, ceiling))
    return lines


def _batch_line(choice: ClosedChoice, points: list[LoadPointRecord], slo: Slo) -> SizingLine:
    best = choice.best
    if best is None:
        return SizingLine(
            "batch / concurrency",
            "none meets the SLO",
            f"no closed-loop point had service {slo.text()} with errors ≤ {slo.max_error_rate:g}",
            [point_label(p) for p in points if p.loop == Loop.CLOSED],
        )
    service = percentile_ms(best, "service", slo.percentile) or 0.0
    none_fit = (
        " — the queueing model leaves no batch room under the SLO, so the most raw texts/s decides"
        if choice.ranked[0][1] == 0
        else ""
    )
    others = "; ".join(
        f"batch {p.batch}: {sig3(at_slo)} (raw {sig3(texts_per_s(p))})" for p, at_slo in choice.ranked[1:]
    )
    return SizingLine(
        "client batch / concurrency",
        f"{best.batch} / {best.concurrency}",
        f"the most texts/s expected at the SLO: {sig3(choice.ranked[0][1])} of its raw {sig3(texts_per_s(best))} "
        f"(service {slo.name} {sig3(service)} ms; requests/s less ln(1/(1−q))/(2·SLO) for queueing)"
        + (f"; {others}" if others else "")
        + none_fit,
        [point_label(p) for p, _ in choice.ranked],
    )


def _rates(rates: list[float]) -> str:
    return ", ".join(sig3(r) for r in sorted(set(rates))) or "none"


def _saturation_lines(saturation: Saturation, slo: Slo) -> list[SizingLine]:
    """The offered rate and what was achieved at it, each its own line (one a rate the client sent, the other
    what the server answered), then any capacity change the probes saw."""
    sat_point = saturation.point
    probes = saturation.probes
    tried = (
        f"passed at {_rates([p.rate for p in probes if p.passed])} requests/s offered; "
        f"failed at {_rates([p.rate for p in probes if not p.passed])}"
        if probes
        else "no probe was measured"
    )
    evidence = [point_label(p.point) for p in probes]
    changes = (
        [
            SizingLine(
                "capacity change between probes",
                "seen",
                "; ".join(saturation.capacity_changes) + ": the answer may mix two capacities; measure again",
                evidence,
            )
        ]
        if saturation.capacity_changes
        else []
    )
    if sat_point is None:
        return [
            SizingLine(
                "saturation rate",
                "none" if saturation.lower_bound is None else "none yet",
                f"no probed rate kept scheduled {slo.text()} with errors ≤ {slo.max_error_rate:g}"
                + (f" ({saturation.lower_bound})" if saturation.lower_bound else "")
                + f"; {tried}{remeasured_text(probes)}",
                evidence,
            ),
            *changes,
        ]
    bound = f", a lower bound: {saturation.lower_bound}" if saturation.lower_bound else ""
    judged = verdict(sat_point, "scheduled", slo)
    offered = SizingLine(
        "saturation rate (goodput, offered)",
        ("≥ " if saturation.lower_bound else "") + f"{sig3(saturation.rate or 0.0)} requests/s",
        f"the highest offered rate with {judged.text(slo, 'scheduled')} ≤ {sig3(slo.ms)} ms and errors "
        f"{error_rate(sat_point):.2%}{bound}; {tried}{remeasured_text(probes)}",
        [point_label(sat_point)],
    )
    achieved = SizingLine(
        "answered at the saturation rate (achieved)",
        f"{sig3(texts_per_s(sat_point))} texts/s",
        f"{sig3(sat_point.throughput.requests_per_s)} requests/s of batch {sat_point.batch} answered in the probe's "
        f"{sig3(sat_point.duration_s)} s measured window",
        [point_label(sat_point)],
    )
    return [offered, achieved, *changes]


def _tei_lines(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None, slo: Slo
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    sources = [p for p in (best, burst) if p is not None]
    if sources:
        largest = max(max(p.batch for p in sources), 1)
        below = (
            f"; below TEI's default {TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE} only so that TEI refuses a larger batch "
            "than these clients send (throughput is the same at the default, which may stay)"
            if largest < TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE
            else ""
        )
        lines.append(
            SizingLine(
                "TEI --max-client-batch-size",
                str(largest),
                "the largest batch a client sends (sized batch, Open WebUI's batch); TEI answers 422 above it"
                + (below or f" (default {TEI_DEFAULT_MAX_CLIENT_BATCH_SIZE})"),
                [point_label(p) for p in sources],
            )
        )
    concurrent = _concurrent_requests_line(best, sat, burst, slo)
    tokens = _batch_tokens_line(sat)
    return lines + [line for line in (concurrent, tokens) if line is not None]


def _concurrent_requests_line(
    best: LoadPointRecord | None, sat: LoadPointRecord | None, burst: LoadPointRecord | None, slo: Slo
) -> SizingLine | None:
    # Inputs in flight: since TEI 1.9 each input holds one permit of --max-concurrent-requests, taken
    # without waiting, so fewer permits than inputs in flight means 429s (../shared/contracts).
    in_flight: list[tuple[float, str, LoadPointRecord]] = []
    if best is not None:
        in_flight.append((best.batch * (best.concurrency or 1), "closed-loop users × batch", best))
    if sat is not None:
        seconds = (percentile_ms(sat, "scheduled", slo.percentile) or 0.0) / 1000.0
        in_flight.append((sat.rate * sat.batch * seconds, f"rate × batch × {slo.name} (Little's law)", sat))
    if burst is not None:
        requests = math.ceil(burst.burst / burst.batch)
        cap = burst.concurrency or requests
        in_flight.append((min(cap, requests) * burst.batch, "Open WebUI's requests in flight × batch", burst))
    if not in_flight:
        return None
    need, how, _point = max(in_flight, key=lambda t: t[0])
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
        why = (
            "no burst point finished without errors"
            if bursts
            else "no burst workload was measured (with --max-time: none fitted in what the search left)"
        )
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
            f"a {burst.burst}-chunk file drained in {sig3(drain)} s ({sig3(texts_per_s(burst))} texts/s), the fastest "
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


def _target(economics: Economics, sat: LoadPointRecord, rate: float) -> tuple[str, float, float, str] | None:
    """(flag, target, one replica's capacity in the target's unit, unit): capacity is the offered saturation rate,
    × batch for texts, × tokens per text for tokens; None: no target, or no tokens/text for a tokens/s one."""
    if economics.target_rps:
        return "--target-rps", economics.target_rps, rate, "requests/s"
    if economics.target_texts_per_s:
        return "--target-texts-per-s", economics.target_texts_per_s, rate * sat.batch, "texts/s"
    tokens = tokens_per_text(sat)
    if economics.target_tokens_per_s and tokens:
        return "--target-tokens-per-s", economics.target_tokens_per_s, rate * sat.batch * tokens, "tokens/s"
    return None


def _economics_lines(
    saturation: Saturation | None, sat: LoadPointRecord | None, economics: Economics
) -> list[SizingLine]:
    lines: list[SizingLine] = []
    wanted = economics.target_rps or economics.target_texts_per_s or economics.target_tokens_per_s
    if sat is None or saturation is None or saturation.rate is None:
        if wanted or economics.gpu_hourly_usd:
            lines.append(SizingLine("replicas / cost", "not determined", "no saturation rate under the SLO", []))
        return lines
    target = _target(economics, sat, saturation.rate)
    if target is not None:
        flag, goal, capacity, unit = target
        lines.append(
            SizingLine(
                f"replicas for {flag}",
                ("≤ " if saturation.lower_bound else "") + str(math.ceil(goal / capacity)),
                f"{sig3(goal)} {unit} ÷ {sig3(capacity)} {unit} offered per replica at the SLO"
                + (f" (batch {sat.batch})" if unit != "requests/s" else "")
                + (" — the rate is a lower bound, so possibly fewer" if saturation.lower_bound else ""),
                [point_label(sat)],
            )
        )
    elif wanted:
        lines.append(SizingLine("replicas for --target-tokens-per-s", "not determined", "no tokens/s was measured", []))
    if economics.gpu_hourly_usd:
        per_text = economics.gpu_hourly_usd / (texts_per_s(sat) * 3600.0)
        lines.append(
            SizingLine(
                "cost per 1M texts",
                f"${sig3(per_text * 1e6)}",
                f"${economics.gpu_hourly_usd:g}/h at {sig3(texts_per_s(sat))} texts/s answered at the saturation rate",
                [point_label(sat)],
            )
        )
        tokens = tokens_per_text(sat)
        if tokens:
            lines.append(
                SizingLine(
                    "cost per 1M tokens",
                    f"${sig3(per_text / tokens * 1e6)}",
                    f"{sig3(tokens)} tokens/text ({sat.throughput.tokens_source})",
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
    fraction = texts_per_s(peak) / top.texts_per_s
    over = (
        "; over 100%: the server outruns the in-process reference (sentence-transformers, batch "
        f"{top.batch}, on {top.device_name}): its own kernels, dtype or GPU are faster — a reference, not a limit"
        if fraction > 1
        else ""
    )
    return SizingLine(
        "fraction of the in-process ceiling",
        f"{sig3(fraction * 100)}%",
        f"server's best {sig3(texts_per_s(peak))} texts/s ÷ in-process {sig3(top.texts_per_s)} texts/s "
        f"({top.device_name}, {top.dtype}){over}",
        [point_label(peak), f"ceiling {top.op} batch={top.batch} len={top.length} {top.dtype}"],
    )
