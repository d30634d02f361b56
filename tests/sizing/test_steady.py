"""Steady state of a probe's queue: the M/G/1 truth, warm-up and probe length from the measured service time, a
growing queue failing its rate — all on simulated latencies (no server, no waiting)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.load.schedule import Arrival
from bench.sizing.plan import expected_text, probe_warmup, search_start, steady_needs_text
from bench.sizing.search import judge_probe, saturation_search
from bench.sizing.slo import Slo
from bench.sizing.steady import growth, mg1_response_s, mg1_saturation, relaxation_s, warmup_for
from bench.sizing.verdict import requests_to_bound
from tests.sizing.test_sizing import open_point


def test_mg1_truth_of_a_deterministic_400ms_server():
    """The issue's figures (M/D/1, 1 slot × 400 ms, Poisson): p95 ≤ 2 s up to 1.72 requests/s, p99 up to 1.39."""
    service = np.array([0.4])
    assert mg1_saturation(service, 2.0, 95.0, requests=40_000, tolerance=0.01) == pytest.approx(1.72, rel=0.04)
    assert mg1_saturation(service, 2.0, 99.0, requests=40_000, tolerance=0.01) == pytest.approx(1.39, rel=0.04)


def test_mg1_response_is_the_service_time_when_arrivals_never_overlap():
    response = mg1_response_s(np.array([0.001]), rate=0.01, requests=200, seed=1)
    assert np.mean(np.isclose(response, 0.001)) > 0.95


def test_warmup_grows_with_utilisation_within_its_bounds():
    assert relaxation_s(0.4, 0.81) == pytest.approx(0.4 / 0.1**2)  # 40 s: (1 − √0.81)² = 0.01
    assert relaxation_s(0.4, 1.0) == float("inf")
    assert warmup_for(0.05, 0.1, floor_s=1.0, cap_s=60.0) == 1.0  # a light load settles within --warmup
    assert warmup_for(0.4, 0.69, floor_s=1.0, cap_s=60.0) == pytest.approx(3 * relaxation_s(0.4, 0.69))
    assert warmup_for(0.4, 0.95, floor_s=1.0, cap_s=60.0) == 60.0


def test_requests_a_percentile_needs():
    """The fewest requests whose slowest bounds the percentile at 95%: the probe's default length after warm-up."""
    assert requests_to_bound(95.0) == 72
    assert requests_to_bound(99.0) == 368


def _probe_latencies(rate: float, warm_s: float, requests: int, seed: int) -> tuple[list[float], list[float]]:
    """Intended send times (s) and scheduled latencies (ms) of a probe's measured window on a 400 ms FIFO server
    that starts empty, after `warm_s` of warm-up."""
    rng = np.random.default_rng(seed)
    total = int(rate * warm_s) + requests
    arrivals = np.cumsum(rng.exponential(1 / rate, total))
    response = mg1_response_s(np.array([0.4]), rate, total, seed)
    kept = arrivals >= arrivals[0] + warm_s
    return list(arrivals[kept]), list(response[kept] * 1000)


def test_a_growing_queue_is_seen_and_a_settled_one_is_not():
    """Past capacity (3/s on a 2.5/s server) the latency climbs part after part; at 50% busy after its warm-up it
    does not, in every one of 20 seeds."""
    overloaded = growth(*_probe_latencies(3.0, 1.0, 100, seed=3), slo_ms=2000.0)
    assert overloaded is not None and overloaded.growing
    assert "the queue was still growing" in overloaded.text()
    settled = [growth(*_probe_latencies(1.25, 15.0, 100, seed=s), slo_ms=2000.0) for s in range(20)]
    assert not any(g is not None and g.growing for g in settled)


def test_growth_needs_every_part():
    assert growth([], [], 2000.0) is None
    assert growth([0.0, 0.1, 10.0], [1.0, 2.0, 3.0], 2000.0) is None  # the middle part is empty


def test_a_growing_queue_fails_a_probe_whose_percentile_met_the_slo():
    """The percentile is under the SLO, but the queue was still growing: the rate fails (and is measured again, as
    any failing probe), and the probe says why."""
    probe = judge_probe(open_point, 10.0, Slo(100.0), unsteady=lambda point: "the queue was still growing: …")
    assert not probe.passed and probe.growing == "the queue was still growing: …" and probe.measured == 2
    steady = judge_probe(open_point, 10.0, Slo(100.0))
    assert steady.passed and steady.growing is None


def test_search_fails_the_rates_whose_queue_grows():
    """Every rate from 20/s on passes its percentile but grows its queue: the answer stays below them."""
    found = saturation_search(
        open_point, 5.0, Slo(100.0), unsteady=lambda p: "growing" if (p.rate or 0) >= 20 else None, confirm=False
    )
    assert found.rate is not None and found.rate < 20 and found.first_failure is not None
    assert all(not p.passed for p in found.probes if p.rate >= 20)


class _Plan:
    """The few plan fields the warm-up, start and budget functions read."""

    def __init__(self, percentile: float = 95.0, slo_ms: float = 2000.0, arrival: str = "poisson"):
        self.slo = Slo(slo_ms, percentile=percentile)
        self.arrival = Arrival(arrival)
        self.warmup_s, self.tolerance, self.max_probes = 1.0, 0.05, 8
        self.probe_requests = requests_to_bound(percentile)
        self.max_time_s: float | None = 300.0
        self.specs, self.lengths, self.sizes = [None], [None], [1, 8, 32]
        self.duration_s, self.op = 3.0, "rerank"
        self.burst_batches, self.burst_concurrency = [1], [1]


def test_probe_warmup_from_the_measured_capacity():
    plan = _Plan()
    assert probe_warmup(plan, 1.72, capacity=2.5) == pytest.approx(3 * relaxation_s(0.4, 1.72 / 2.5))  # type: ignore[arg-type]
    assert probe_warmup(plan, 1.72, capacity=2.5, share_s=20.0) == 10.0  # type: ignore[arg-type]
    assert probe_warmup(_Plan(arrival="constant"), 1.72, capacity=2.5) == 1.0  # type: ignore[arg-type]
    assert probe_warmup(plan, 1.72, capacity=None) == 1.0  # type: ignore[arg-type]


def test_search_starts_where_one_fifo_server_of_that_capacity_meets_the_slo():
    assert search_start(_Plan(), 2.5) == pytest.approx(1.72, rel=0.05)  # type: ignore[arg-type]
    assert search_start(_Plan(slo_ms=300.0), 2.5) is None  # type: ignore[arg-type]


def test_the_budget_a_steady_verdict_needs_is_said_when_max_time_cannot_hold_it():
    plan = _Plan(percentile=99.0)
    said = steady_needs_text(plan, 1.39, 2.5, left_s=250.0)  # type: ignore[arg-type]
    assert said is not None and "368 requests" in said and "the interval between" in said
    assert steady_needs_text(_Plan(), 10.0, 100.0, left_s=250.0) is None  # type: ignore[arg-type]


def test_expected_time_says_no_budget_when_none_was_given():
    plan = _Plan()
    plan.max_time_s = None
    text = expected_text(plan)  # type: ignore[arg-type]
    assert "bounds it" not in text and "no --max-time" in text
