"""The queue simulation behind `size --trace`'s truth (benchmarks/trace_size_truth.py) against closed forms: M/M/1
(sojourn exponential at rate μ − λ), M/D/1 (Pollaczek–Khinchine), M/M/2 (Erlang C), D/D/1 (no wait below capacity),
and the truth speed of a constant trace equal to its capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.trace_size_truth import QueueTrace, fifo_latencies, steady_percentile_s, truth_speed

CALLS = 400_000


def poisson(rate: float, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(1 / rate, CALLS))


def steady(latencies: np.ndarray) -> np.ndarray:
    return latencies[CALLS // 10 :]


def test_mm1_sojourn_is_exponential_at_mu_minus_lambda():
    lam, mu = 0.5, 1.0
    service = np.random.default_rng(2).exponential(1 / mu, CALLS)
    latencies = steady(fifo_latencies(poisson(lam, 1), service))
    assert np.mean(latencies) == pytest.approx(1 / (mu - lam), rel=0.05)
    assert np.percentile(latencies, 99) == pytest.approx(math.log(100) / (mu - lam), rel=0.05)


def test_md1_mean_wait_is_pollaczek_khinchine():
    lam, service = 0.7, 1.0
    rho = lam * service
    latencies = steady(fifo_latencies(poisson(lam, 3), np.full(CALLS, service)))
    assert np.mean(latencies) - service == pytest.approx(rho * service / (2 * (1 - rho)), rel=0.05)


def test_mm2_mean_wait_is_erlang_c():
    lam, mu, servers = 1.0, 1.0, 2  # offered load a = 1, ρ = 0.5: Erlang C = 1/3, mean wait C / (cμ − λ) = 1/3
    service = np.random.default_rng(4).exponential(1 / mu, CALLS)
    latencies = steady(fifo_latencies(poisson(lam, 5), service, servers))
    assert np.mean(latencies) - 1 / mu == pytest.approx((1 / 3) / (servers * mu - lam), rel=0.05)


def test_a_constant_trace_waits_for_nothing_below_capacity_and_its_truth_is_the_capacity():
    trace = QueueTrace(np.arange(100) * 0.025, np.full(100, 0.010))  # 40 calls/s, 10 ms each: capacity × 2.5
    assert trace.capacity_speed == pytest.approx(2.5)
    assert steady_percentile_s(trace, 2.4, 99, min_calls=10_000) == pytest.approx(0.010)
    assert steady_percentile_s(trace, 2.6, 99) == math.inf  # past capacity: never settles
    assert truth_speed(trace, 0.1, 99) == pytest.approx(2.5, rel=2e-3)


def test_the_truth_of_a_bursty_trace_is_set_by_its_bursts_not_its_mean_rate():
    at = np.repeat(np.arange(50) * 0.1, 4)  # bursts of 4 calls every 100 ms, 10 ms each: 40% busy at × 1
    trace = QueueTrace(at, np.full(200, 0.010))
    # A burst's last call waits 30 ms at any speed: a p99 under 40 ms holds at none, a p99 of 1 s up to capacity.
    assert truth_speed(trace, 0.035, 99) < 1e-2
    assert truth_speed(trace, 1.0, 99) == pytest.approx(trace.capacity_speed, rel=2e-3)
    found = truth_speed(trace, 0.060, 99)
    assert steady_percentile_s(trace, found, 99) <= 0.060 < steady_percentile_s(trace, found * 1.01, 99)


def test_the_steady_percentile_weighs_every_call_of_the_trace_alike():
    """Whole loops are dropped: cutting 10% of the calls cut a loop in two, and where the percentile's rank falls
    between two values (p99 of 300 calls: exactly 3 above it) the cut decided which (issue 45's bursty trace at
    ×0.625: 102.9 ms with the half loop, 96.2 ms over whole ones, as one loop gives)."""
    from benchmarks.trace_size_truth import bursty_arrivals, fifo_latencies

    at = bursty_arrivals()
    trace = QueueTrace(at, np.full(len(at), 0.02), servers=2)
    one_loop = float(np.percentile(fifo_latencies(at / 0.625, trace.service_s, 2), 99))
    for calls in (30_000, 100_000, 100_100):
        assert steady_percentile_s(trace, 0.625, 99, calls) == pytest.approx(one_loop, rel=1e-9)
