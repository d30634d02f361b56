"""The server as the closed loop measured it: its service-time distribution and slots, and the queue that makes.

A fixed-service model (M/D/1 at the closed loop's capacity) put the search's start above the true capacity of a
4-slot server with heavy-tailed service (lognormal, CV 1.5: M/D/1 start 28.2/s, truth 16.6/s), and sized its probes
for a tail it does not have. Here the model is the measured distribution itself: the service times of the
closed-loop points that queued nothing (concurrency ≤ slots), served by `slots` = capacity × mean service slots in
arrival order (M/G/c), simulated under Poisson arrivals. It gives the search's start (the highest rate whose
simulated steady percentile keeps the SLO), the requests a verdict needs at a rate (how far the SLO sits from the
simulated percentile, in binomial deviations) and how many requests in a row move together (the indicator of a slow
request's integrated autocorrelation, by batch means) — each from the tail that was measured.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from bench.load.points import recorded_us
from bench.results.schema import LoadPointRecord
from bench.sizing.verdict import CONFIDENCE, requests_to_bound

MODEL_REQUESTS = 40_000  # Poisson arrivals simulated per rate (a 4-slot queue: ~0.1 s)
STRETCH_BLOCK = 800  # requests per batch mean when counting how many in a row move together (≫ their stretch)
MIN_SERVICE_SAMPLES = 20  # fewer measured service times say nothing of a tail: no model
MOST_REQUESTS = 100_000  # a verdict needing more is undecidable at that rate (the SLO sits on its percentile)
Z = 1.96  # two-sided CONFIDENCE (95%)


def mgc_response_s(service_s: np.ndarray, slots: int, rate: float, requests: int, seed: int = 0) -> np.ndarray:
    """Response times (s) of `requests` Poisson arrivals at `rate` to `slots` servers taking requests in arrival
    order, each request's service drawn from `service_s` (one slot: the Lindley recursion)."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, requests)).tolist()
    service = rng.choice(np.asarray(service_s, dtype=float), requests).tolist()
    free = [0.0] * max(1, slots)
    out = np.empty(requests)
    for i, (arrived, s) in enumerate(zip(arrivals, service, strict=True)):
        done = max(heapq.heappop(free), arrived) + s
        heapq.heappush(free, done)
        out[i] = done - arrived
    return out


@dataclass
class ServiceModel:
    """Measured service times (s) and the slots serving them; simulations cached per rate."""

    service_s: np.ndarray
    slots: int
    _cache: dict[float, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def capacity(self) -> float:
        return self.slots / float(np.mean(self.service_s))

    def responses(self, rate: float) -> np.ndarray:
        """The steady part of a simulated run at `rate` (its first tenth, the empty start, dropped)."""
        key = round(rate, 6)
        if key not in self._cache:
            self._cache[key] = mgc_response_s(self.service_s, self.slots, rate, MODEL_REQUESTS)[MODEL_REQUESTS // 10 :]
        return self._cache[key]

    def percentile_s(self, rate: float, percentile: float) -> float:
        return float(np.percentile(self.responses(rate), percentile))

    def saturation(self, slo_s: float, percentile: float, tolerance: float = 0.004) -> float:
        """The highest Poisson rate whose simulated steady percentile stays ≤ `slo_s` (bisection; 0: none)."""
        low, high = 0.0, self.capacity
        while high - low > tolerance * high:
            mid = (low + high) / 2
            low, high = (mid, high) if self.percentile_s(mid, percentile) <= slo_s else (low, mid)
        return low

    def stretch(self, rate: float, slo_s: float, percentile: float) -> float:
        """Requests in a row that move together at `rate`: the integrated autocorrelation of 'slower than the
        percentile' (batch means over STRETCH_BLOCK requests); 1 for independent requests, ∞ past capacity."""
        if rate >= self.capacity:
            return math.inf
        x = self.responses(rate)
        slow = (x > np.percentile(x, percentile)).astype(float)
        var = slow.var()
        blocks = len(slow) // STRETCH_BLOCK
        if var <= 0 or blocks < 2:
            return 1.0
        means = slow[: blocks * STRETCH_BLOCK].reshape(blocks, STRETCH_BLOCK).mean(axis=1)
        return max(1.0, STRETCH_BLOCK * float(means.var()) / float(var))

    def requests_to_decide(self, rate: float, slo_s: float, percentile: float) -> int | None:
        """Requests a probe at `rate` needs for its percentile's 95% interval to clear the SLO on the side the model
        puts it (a pass at least requests_to_bound's), counting `stretch` in a row as one; None: more than
        MOST_REQUESTS (the SLO sits on the percentile there: no window decides it)."""
        share_under = float(np.mean(self.responses(rate) <= slo_s))
        return requests_for(share_under, percentile, self.stretch(rate, slo_s, percentile))


def requests_for(share_under: float, percentile: float, stretch: float) -> int | None:
    """Requests whose percentile's 95% interval clears the SLO when `share_under` of them are under it: the share's
    distance from the percentile in binomial deviations (a pass at least requests_to_bound's), `stretch` in a row
    counting as one; None past MOST_REQUESTS (the SLO sits on the percentile: no window decides it)."""
    q = percentile / 100.0
    gap = abs(share_under - q)
    if gap <= 0:
        return None
    independent = math.ceil((Z * math.sqrt(q * (1 - q)) / gap) ** 2) + math.ceil(1 / gap)
    if share_under >= q:
        independent = max(independent, requests_to_bound(percentile, CONFIDENCE))
    needed = independent * stretch
    return None if not math.isfinite(needed) or needed > MOST_REQUESTS else math.ceil(needed)


def service_model(points: list[LoadPointRecord], capacity: float) -> ServiceModel | None:
    """The model from one batch's closed-loop points: the service times of the points that queued nothing, and as
    many slots as the sweep's knee shows or its capacity × their mean service, whichever is more; None when too
    few. Capacity × the lone user's mean alone is two noisy figures of a heavy tail (a 4-slot server read as 2:
    21/s × 112 ms, from 3 s points on a busy machine); the knee is where the median latency first rises (below)."""
    knee = queue_free(points)
    if capacity <= 0 or knee is None:
        return None
    service = _service_s([p for p in points if (p.concurrency or 0) <= knee])
    if len(service) < MIN_SERVICE_SAMPLES:
        return None
    return ServiceModel(service, max(knee, round(capacity * float(np.mean(service)))))


# Users beyond the slots wait: at twice the slots a closed loop's latency doubles. A point whose median latency is
# under this many times that of the points below it queued nothing (a heavy tail's 3 s medians move by ±20%).
KNEE_RISE = 1.5


def queue_free(points: list[LoadPointRecord]) -> int | None:
    """The most closed-loop users whose median latency stayed within KNEE_RISE of the fewer users' (None:
    no lone user measured): a lower bound on the server's slots."""
    measured = sorted(
        (p for p in points if p.concurrency and p.requests.ok and p.latency_ms.service is not None),
        key=lambda p: p.concurrency or 0,
    )
    if not measured or measured[0].concurrency != 1:
        return None
    knee, means = 1, [_mean_ms(measured[0])]
    for point in measured[1:]:
        if _mean_ms(point) >= KNEE_RISE * float(np.mean(means)):
            break
        knee, means = point.concurrency or knee, [*means, _mean_ms(point)]
    return knee


def _mean_ms(point: LoadPointRecord) -> float:
    """The point's median service latency: a heavy tail moves a few dozen requests' mean by ±25%, its median less."""
    block = point.latency_ms.service
    if block is None:
        return math.inf
    return float(block.p50) if block.p50 is not None else block.mean


def _service_s(points: list[LoadPointRecord]) -> np.ndarray:
    """Every service time (s) the points' histograms recorded."""
    samples: list[np.ndarray] = []
    for point in points:
        buckets = recorded_us(point, "service")
        if buckets:
            values, counts = zip(*buckets, strict=True)
            samples.append(np.repeat(np.asarray(values, dtype=float) / 1e6, counts))
    return np.concatenate(samples) if samples else np.empty(0)


def fixed_service(capacity: float) -> ServiceModel:
    """Too few service times to model a tail: one FIFO slot, each request 1/capacity s (M/D/1, the old start)."""
    return ServiceModel(np.array([1.0 / capacity]), 1)
