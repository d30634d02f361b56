"""Steady state of a probe's queue: the M/G/1 truth, how long a queue takes to settle, and a growing queue seen.

A rate passes an SLO only where its queue has settled (GuideLLM stops on over-saturation the same way): a server
81% busy needs tens of seconds for its queue to build up, and a probe of a few dozen requests from an empty queue
passed 2.03 requests/s on a 2.5 requests/s server whose steady-state p95 is 3.2 s there.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from bench.sizing.slo import sig3

# A queue's distance from its steady state shrinks by e every relaxation time, ~ service / (1 − √ρ)² (M/M/1;
# Cohen); a probe's warm-up lasts this many of them, so what is left of the empty start is e⁻³ ≈ 5%.
WARMUP_RELAXATIONS = 3.0
# A Poisson probe's measured window lasts at least this many relaxation times: a queue's latencies move together for
# about one, so a shorter window holds one or two independent stretches whatever its request count.
WINDOW_RELAXATIONS = 5.0
# A probe's window holds at most its planned requests plus this many Poisson deviations (a 0.1% tail).
MOST_DEVIATIONS = 3.0
# A probe's measured requests in this many parts by intended send time: its scheduled latency's median rising
# from part to part by more than GROWTH_SHARE of the SLO in all is a queue still growing, not a steady one.
PARTS = 3
GROWTH_SHARE = 0.25


def mg1_response_s(service_s: np.ndarray, rate: float, requests: int, seed: int = 0) -> np.ndarray:
    """Response times (wait + service, s) of `requests` Poisson arrivals at `rate` to one FIFO server whose
    service times are drawn from `service_s`: the Lindley recursion W₍ₙ₊₁₎ = max(0, Wₙ + Sₙ − A₍ₙ₊₁₎)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, requests)
    service = rng.choice(np.asarray(service_s, dtype=float), requests)
    wait = np.zeros(requests)
    for i in range(1, requests):
        wait[i] = max(0.0, wait[i - 1] + service[i - 1] - gaps[i])
    response: np.ndarray = wait + service
    return response


def steady_percentile_s(service_s: np.ndarray, rate: float, percentile: float, requests: int = 200_000) -> float:
    """The steady-state percentile of the response time at `rate` (its first tenth dropped: the empty start)."""
    response = mg1_response_s(service_s, rate, requests)
    return float(np.percentile(response[requests // 10 :], percentile))


def mg1_saturation(
    service_s: np.ndarray, slo_s: float, percentile: float, requests: int = 200_000, tolerance: float = 0.002
) -> float:
    """The highest Poisson rate (requests/s) whose steady-state percentile stays ≤ `slo_s` on one FIFO server with
    these service times: the truth a `size` answer is checked against (bisection on the rate; 1 slot × 400 ms,
    p95 ≤ 2 s: 1.72 requests/s)."""
    low, high = 0.0, 1.0 / float(np.mean(service_s))  # at capacity the queue never settles
    while (high - low) > tolerance * high:
        mid = (low + high) / 2
        if steady_percentile_s(service_s, mid, percentile, requests) <= slo_s:
            low = mid
        else:
            high = mid
    return low


def relaxation_s(service_s: float, utilisation: float) -> float:
    """The time a queue at this utilisation takes to shed e of its distance from steady state: service / (1 − √ρ)²
    (M/M/1; infinite at or past capacity)."""
    if utilisation >= 1.0:
        return math.inf
    return service_s / (1.0 - math.sqrt(max(utilisation, 0.0))) ** 2


def warmup_for(service_s: float, utilisation: float, floor_s: float, cap_s: float) -> float:
    """A probe's warm-up: WARMUP_RELAXATIONS relaxation times of its queue, at least `floor_s` (--warmup), at most
    `cap_s` (a rate past capacity fails whatever the warm-up, and the growing-queue check sees it)."""
    return min(max(floor_s, WARMUP_RELAXATIONS * relaxation_s(service_s, utilisation)), max(cap_s, floor_s))


def stretch(rate: float, service_s: float, utilisation: float) -> float:
    """Requests in a row whose latencies move together in a queue (1 + 2·rate·relaxation time, the integrated
    autocorrelation of an AR(1)-like series): a percentile from n of them rests on about n ÷ this."""
    tau = relaxation_s(service_s, utilisation)
    return math.inf if math.isinf(tau) else 1.0 + 2.0 * rate * tau


@dataclass(frozen=True)
class Growth:
    """The median scheduled latency (ms) of each part of a probe's measured window, in time order."""

    medians_ms: list[float]
    slo_ms: float

    @property
    def growing(self) -> bool:
        """Rising in every part, and by more than GROWTH_SHARE of the SLO from the first part to the last."""
        m = self.medians_ms
        rising = len(m) >= 2 and all(b > a for a, b in itertools.pairwise(m))
        return rising and m[-1] - m[0] > GROWTH_SHARE * self.slo_ms

    def text(self) -> str:
        """`the queue was still growing: median scheduled latency 410 → 900 → 1,600 ms over the probe's thirds`."""
        shown = " → ".join(f"{sig3(m)}" for m in self.medians_ms)
        parts = len(self.medians_ms)
        return f"the queue was still growing: median scheduled latency {shown} ms over the probe's {parts} parts"


def growth(intended_s: list[float], latency_ms: list[float], slo_ms: float, parts: int = PARTS) -> Growth | None:
    """The medians of a probe's scheduled latencies in `parts` equal spans of intended send time; None when a part
    is empty (too few requests to tell)."""
    if not intended_s:
        return None
    t = np.asarray(intended_s, dtype=float)
    lat = np.asarray(latency_ms, dtype=float)
    edges = np.linspace(t.min(), t.max(), parts + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, parts - 1)
    medians = [lat[which == k] for k in range(parts)]
    if any(len(m) == 0 for m in medians):
        return None
    return Growth([float(np.median(m)) for m in medians], slo_ms)


def failure_certain(over: int, planned: float, percentile: float) -> bool:
    """A probe planned to hold `planned` requests fails whatever its other answers once `over` of them are past the
    SLO: more than a pass allows (1 − q of them) even if its window held the most it can (planned + 3 Poisson
    deviations). Then its percentile is over the SLO, and ending its window there changes no verdict."""
    most = planned + MOST_DEVIATIONS * math.sqrt(max(planned, 0.0))
    return over > (1.0 - percentile / 100.0) * most
