"""What a point's percentile rests on: its requests and the distribution-free interval of its order statistics."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import binom

from bench.load.points import order_statistic_ms, percentile_ms, recorded_us
from bench.results.schema import LoadPointRecord
from bench.sizing.slo import Slo, sig3

CONFIDENCE = 0.95  # of a probe's order-statistic interval for its percentile


@dataclass(frozen=True)
class PercentileEvidence:
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


def verdict(point: LoadPointRecord, quantity: str, slo: Slo) -> PercentileEvidence:
    buckets = recorded_us(point, quantity)
    block = getattr(point.latency_ms, quantity)
    n = sum(count for _, count in buckets) if buckets else (block.count if block is not None else 0)
    value = percentile_ms(point, quantity, slo.percentile)
    if not buckets or not n:
        return PercentileEvidence(n, value, None, None)
    low, high = order_ranks(n, slo.percentile)
    return PercentileEvidence(
        n,
        value,
        order_statistic_ms(buckets, low) if low is not None else None,
        order_statistic_ms(buckets, high) if high is not None else None,
    )


def correlated_bound_ms(point: LoadPointRecord, quantity: str, slo: Slo, stretch: float) -> tuple[float, int] | None:
    """The upper end of the percentile's interval when consecutive requests share a queue: `stretch` requests in a
    row count as one (1 + 2·rate·relaxation time: a queue's latencies move together for about that long), so the
    interval's rank comes from n ÷ stretch requests and is scaled back to n; with too few stretches to bound it, the
    slowest request. (bound ms, effective requests); None: nothing recorded."""
    buckets = recorded_us(point, quantity)
    n = sum(count for _, count in buckets) if buckets else 0
    if not buckets or not n:
        return None
    effective = max(1, int(n / max(stretch, 1.0)))
    _, high = order_ranks(effective, slo.percentile)
    rank = n if high is None else min(n, math.ceil(high / effective * n))
    return order_statistic_ms(buckets, rank), effective
