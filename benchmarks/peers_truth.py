"""The truths benchmarks/peers.py holds each tool's figures against (docs/peers.md): pure functions, tested in
tests/benchmarks/test_peers_truth.py."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sizing.steady import mg1_saturation  # noqa: E402


def stall_percentile_ms(stall_ms: float, period_ms: float, service_ms: float, percentile: float) -> float:
    """The latency percentile of uniform (open-loop, constant-rate) arrivals at a server that answers in `service_ms`
    except during the first `stall_ms` of every `period_ms`, when answers wait for the stall's end: a request
    arriving u ms into the stall waits stall - u, so the slowest fraction f = stall/period of requests is spread
    uniformly over (service, stall + service]; the q-th percentile is stall - (1 - q) period + service where it
    falls in a stall, else the service time. Timed from the intended send (wrk2's and ragbench's `scheduled`)."""
    tail = 1.0 - percentile / 100.0
    if tail * period_ms >= stall_ms:
        return service_ms
    return stall_ms - tail * period_ms + service_ms


@dataclass(frozen=True)
class QueueCase:
    """A queue server of known truth: mean service, lognormal CV (0: fixed), slots, and the SLO it is sized to."""

    service_ms: float
    cv: float
    slots: int
    percentile: float
    slo_ms: float

    @property
    def label(self) -> str:
        shape = "fixed" if self.cv == 0 else f"lognormal CV {self.cv:g}, {self.slots} slots"
        return f"{self.service_ms:g} ms {shape}, p{self.percentile:g} <= {self.slo_ms:g} ms"

    @property
    def capacity(self) -> float:
        return self.slots * 1000.0 / self.service_ms


def fixed_truth(case: QueueCase) -> float:
    """The highest Poisson rate whose steady-state percentile keeps the SLO, one slot of fixed service (M/D/1)."""
    return float(mg1_saturation(np.array([case.service_ms / 1000.0]), case.slo_ms / 1000.0, case.percentile))


def case_truth(case: QueueCase) -> float:
    """The case's truth: M/D/1 for a fixed service, else the queue simulation of the server's own seeded draws."""
    if case.cv == 0 and case.slots == 1:
        return fixed_truth(case)
    from benchmarks.size_truth import mgc_truth

    rate, _ = mgc_truth(case.service_ms, case.cv, case.slots, case.slo_ms / 1000.0, case.percentile)
    return rate


def relative_error(value: float | None, truth: float) -> float | None:
    """(value - truth) / truth; None when the tool gave no answer."""
    if value is None or truth == 0:
        return None
    return value / truth - 1.0


def highest_passing(points: list[tuple[float, float]], slo_ms: float) -> float | None:
    """A sweep's answer: the highest rate among (rate, percentile ms) points whose percentile keeps the SLO, below
    the first that does not (a later pass past a failure is noise, not capacity); None when none passes."""
    best = None
    for rate, value in sorted(points):
        if value > slo_ms:
            break
        best = rate
    return best
