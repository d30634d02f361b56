"""benchmarks/peers_truth.py: the truths docs/peers.md holds each tool against."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.peers_truth import (
    QueueCase,
    fixed_truth,
    highest_passing,
    relative_error,
    stall_percentile_ms,
)

# A simulated open loop's percentile sits within a send's spacing (5 ms at 200/s) of the analytic one.
SPACING_MS = 5.0


def simulated_percentile(stall: float, period: float, service: float, rate: float, q: float) -> float:
    """Constant arrivals over whole periods, each answered at max(arrival, the stall's end) + service."""
    arrivals = np.arange(0, 20 * period, 1000.0 / rate) + 0.5  # off the period's edges
    phase = arrivals % period
    latency = np.where(phase < stall, stall - phase, 0.0) + service
    return float(np.percentile(latency, q))


@pytest.mark.parametrize("q", [50.0, 90.0, 99.0])
def test_stall_percentile_matches_a_simulated_open_loop(q):
    truth = stall_percentile_ms(200.0, 1000.0, 2.0, q)
    assert truth == pytest.approx(simulated_percentile(200.0, 1000.0, 2.0, 200.0, q), abs=SPACING_MS)


def test_stall_p99_of_the_page():
    assert stall_percentile_ms(200.0, 1000.0, 2.0, 99.0) == pytest.approx(192.0)
    assert stall_percentile_ms(200.0, 1000.0, 2.0, 50.0) == pytest.approx(2.0)  # outside the stall's 20%


def test_fixed_truth_below_capacity_and_rising_with_the_slo():
    tight = fixed_truth(QueueCase(50.0, 0.0, 1, 95.0, 250.0))
    loose = fixed_truth(QueueCase(50.0, 0.0, 1, 95.0, 1000.0))
    assert 0.5 * 20.0 < tight < loose < 20.0  # M/D/1 at 50 ms: capacity 20/s


def test_relative_error_and_no_answer():
    assert relative_error(9.0, 10.0) == pytest.approx(-0.1)
    assert relative_error(None, 10.0) is None


def test_highest_passing_stops_at_the_first_failure():
    points = [(10.0, 100.0), (12.0, 240.0), (14.0, 300.0), (16.0, 200.0)]
    assert highest_passing(points, 250.0) == 12.0  # 16/s passing after 14/s failed is noise
    assert highest_passing([(10.0, 300.0)], 250.0) is None


def test_case_label_and_capacity():
    case = QueueCase(148.0, 1.5, 4, 95.0, 600.0)
    assert case.label == "148 ms lognormal CV 1.5, 4 slots, p95 <= 600 ms"
    assert case.capacity == pytest.approx(4000.0 / 148.0)
