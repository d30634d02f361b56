"""The replay report's arrival check (bench/load/trace_compare.py): inter-arrival gaps compared by a two-sample KS
test with the replay's 1 ms timing tolerance, so a constant-gap recording replayed with realistic jitter keeps its
verdict, while a replay at another rate or with another arrival process still fails."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ks_2samp

from bench.endpoints.meter_trace import CallKind, TraceCall
from bench.load.trace_compare import GAP_TOLERANCE_S, compare_route, gaps_ks_p
from bench.load.trace_replay import RouteReplay
from bench.report.trace import KS_MIN

CALLS = 500
GAP_S = 0.010  # a constant-gap recording: 100 calls/s


def jittered_gaps(arrivals: np.ndarray, seed: int) -> np.ndarray:
    """The gaps of `arrivals` sent each with up to ±0.5 ms of timing jitter."""
    jitter = np.random.default_rng(seed).uniform(-0.0005, 0.0005, arrivals.size)
    return np.diff(arrivals + jitter)


def constant_arrivals(gap_s: float) -> np.ndarray:
    return np.arange(CALLS) * gap_s


def poisson_arrivals(mean_gap_s: float, seed: int) -> np.ndarray:
    return np.cumsum(np.random.default_rng(seed).exponential(mean_gap_s, CALLS))


def test_a_constant_gap_recording_replayed_with_jitter_keeps_its_shape():
    recorded = np.diff(constant_arrivals(GAP_S))
    replayed = jittered_gaps(constant_arrivals(GAP_S), seed=1)
    assert ks_2samp(recorded, replayed).pvalue <= KS_MIN  # the plain test's false "not faithful"
    p = gaps_ks_p(recorded, replayed)
    assert p is not None and p > KS_MIN


@pytest.mark.parametrize("speed", [0.8, 0.9, 1.1, 1.25])
def test_a_constant_gap_recording_replayed_at_another_rate_fails(speed: float):
    recorded = np.diff(constant_arrivals(GAP_S))
    replayed = jittered_gaps(constant_arrivals(GAP_S / speed), seed=2)
    p = gaps_ks_p(recorded, replayed)
    assert p is not None and p <= KS_MIN


def test_another_arrival_process_at_the_same_rate_fails():
    recorded = np.diff(constant_arrivals(GAP_S))
    replayed = jittered_gaps(poisson_arrivals(GAP_S, seed=3), seed=4)
    p = gaps_ks_p(recorded, replayed)
    assert p is not None and p <= KS_MIN
    p_reverse = gaps_ks_p(replayed, recorded)  # a Poisson recording replayed at constant gaps: the same miss
    assert p_reverse is not None and p_reverse <= KS_MIN


def test_a_poisson_recording_replayed_with_jitter_keeps_its_shape_and_fails_at_another_rate():
    arrivals = poisson_arrivals(GAP_S, seed=5)
    recorded = np.diff(arrivals)
    same = gaps_ks_p(recorded, jittered_gaps(arrivals, seed=6))
    faster = gaps_ks_p(recorded, jittered_gaps(arrivals / 1.5, seed=7))
    assert same is not None and same > KS_MIN
    assert faster is not None and faster <= KS_MIN


def test_without_tolerance_it_is_the_two_sample_ks_test():
    a, b = np.diff(poisson_arrivals(GAP_S, seed=8)), np.diff(poisson_arrivals(GAP_S * 1.1, seed=9))[:300]
    expected = ks_2samp(a, b, method="asymp").pvalue
    plain, tolerant = gaps_ks_p(a, b, tolerance_s=0.0), gaps_ks_p(a, b)
    assert plain == pytest.approx(expected, rel=1e-9)
    assert plain is not None and tolerant is not None and tolerant >= plain  # never stricter


def test_fewer_than_two_gaps_on_a_side_has_no_p():
    assert gaps_ks_p(np.array([GAP_S]), np.full(10, GAP_S)) is None
    assert gaps_ks_p(np.full(10, GAP_S), np.zeros(0)) is None


def test_the_route_comparison_uses_the_tolerance():
    arrivals = constant_arrivals(GAP_S)
    recorded = tuple(TraceCall(float(t), "embedding", CallKind.EMBED, (5,), latency=0.02) for t in arrivals)
    sent = arrivals + np.random.default_rng(10).uniform(0.0, GAP_TOLERANCE_S, CALLS)  # late, never early
    replay = RouteReplay(
        route="embedding",
        endpoint="fx",
        recorded=recorded,
        intended_s=tuple(arrivals),
        sent_s=tuple(sent),
        end_s=tuple(sent + 0.02),
        outcomes=("ok",) * CALLS,
        texts=(1,) * CALLS,
    )
    row = compare_route(replay, speed=1.0)
    assert row.arrivals_ks_p is not None and row.arrivals_ks_p > KS_MIN
    assert row.texts_identical and row.errors == 0
