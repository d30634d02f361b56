"""`size --trace`: the speed search (×1, then ×2 up or halves down, bisect to PRECISION, failures measured again,
too-busy replays neither pass nor fail), the judge, the machine's share, replicas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.endpoints.meter_trace import CallKind, TraceCall
from bench.load import histograms
from bench.load.trace_replay import RouteReplay
from bench.results.schema import SpeedOutcome, TraceSpeedProbe
from bench.sizing.slo import Slo
from bench.sizing.trace_size import (
    MIN_SPEED,
    PRECISION,
    RECHECK_BAND,
    SpeedSearch,
    SpeedVerdict,
    judge_replay,
    machine_share,
)

PASS, FAIL, BUSY = SpeedOutcome.PASS, SpeedOutcome.FAIL, SpeedOutcome.TOO_BUSY


def capacity_at(limit: float, seen: list[float] | None = None):
    def measure(speed: float) -> SpeedVerdict:
        if seen is not None:
            seen.append(speed)
        return SpeedVerdict(speed, PASS if speed <= limit else FAIL, "" if speed <= limit else "p99 past the SLO")

    return measure


def distinct(speeds: list[float]) -> list[float]:
    """The speeds in the order first tried (a re-measurement repeats its speed)."""
    return [s for i, s in enumerate(speeds) if i == 0 or speeds[i - 1] != s]


@pytest.mark.parametrize("limit", [0.3, 0.6, 1.0, 3.4, 37.0])
def test_the_search_brackets_the_capacity_within_its_precision(limit: float):
    found = SpeedSearch(capacity_at(limit), max_probes=30).run()
    assert found.passed is not None and found.failed is not None
    assert found.passed.speed <= limit < found.failed.speed
    assert found.failed.speed / found.passed.speed <= 1 + PRECISION
    assert found.replicas(3.0) == math.ceil(3.0 / found.passed.speed)


def test_a_failing_x1_is_bisected_down_by_halves_then_midpoints():
    """Issue 45: after ×1 failed the search jumped to ×0.125 (the geometric middle of ×1/64 and ×1). Now: how much
    of the traffic fits — ×0.5, then the midpoints ×0.75, ×0.625, … — and the replicas that carry all of it."""
    seen: list[float] = []
    found = SpeedSearch(capacity_at(0.6, seen), max_probes=30).run()
    assert distinct(seen)[:5] == [1.0, 0.5, 0.75, 0.625, 0.5625]
    assert found.passed is not None and found.passed.speed < 1
    assert found.replicas() == math.ceil(1 / found.passed.speed) == 2
    assert "does not fit" in found.sentence() and "2 replica(s)" in found.sentence()


def test_nothing_fits_halves_down_to_the_floor_and_says_so():
    seen: list[float] = []
    found = SpeedSearch(capacity_at(0.0, seen), max_probes=30).run()
    assert min(seen) == pytest.approx(MIN_SPEED) and found.passed is None and found.replicas() is None
    assert "no speed" in found.sentence()


def test_a_failure_is_measured_again_and_a_third_decides():
    answers = iter([PASS, FAIL, PASS, FAIL])  # ×1 passes; ×2 fails, passes, fails: a failure
    seen: list[float] = []

    def measure(speed: float) -> SpeedVerdict:
        seen.append(speed)
        return SpeedVerdict(speed, next(answers, FAIL), "")

    found = SpeedSearch(measure, max_probes=2).run()
    assert seen == [1.0, 2.0, 2.0, 2.0] and found.passed is not None and found.passed.speed == 1.0


def probe(speed: float, outcome: SpeedOutcome, percentile_ms: float) -> TraceSpeedProbe:
    return TraceSpeedProbe(speed, outcome, "", 200, 10.0, 12.0, 20.0, 20.0, percentile_ms, 0, 1.0)


def test_a_failure_far_past_the_slo_stands_without_a_second_look():
    """A replay the client carried does not miss by RECHECK_BAND by chance: its second look would spend a probe."""
    slo_ms = 100.0
    seen: list[float] = []

    def measure(speed: float) -> SpeedVerdict:
        seen.append(speed)
        figure = 50.0 if speed <= 0.5 else (RECHECK_BAND + 0.1) * slo_ms
        outcome = PASS if figure <= slo_ms else FAIL
        reason = "" if outcome == PASS else f"r p99 {figure} ms passes {slo_ms} ms"
        return SpeedVerdict(speed, outcome, reason, probe(speed, outcome, figure))

    SpeedSearch(measure, max_probes=2, slo_ms=slo_ms).run()
    assert seen == [1.0, 0.5]


def test_a_too_busy_replay_is_neither_a_failure_nor_a_pass_and_is_measured_once_more():
    """Issue 45: a machine's stall read as the endpoint's failure. A too-busy replay is measured again; the
    second, carried, decides."""
    answers = iter([BUSY, PASS, PASS, FAIL])  # ×1 busy then passes; ×2 passes; ×4 fails (measured again: fails)
    seen: list[float] = []

    def measure(speed: float) -> SpeedVerdict:
        seen.append(speed)
        outcome = next(answers, FAIL)
        return SpeedVerdict(speed, outcome, "this machine was too busy: ..." if outcome == BUSY else "")

    found = SpeedSearch(measure, max_probes=3).run()
    assert seen[:2] == [1.0, 1.0] and found.passed is not None and found.passed.speed == 2.0
    assert found.too_busy is None and found.failed is not None and found.failed.speed == 4.0


def test_twice_too_busy_ends_the_search_saying_so_never_a_failure():
    seen: list[float] = []

    def measure(speed: float) -> SpeedVerdict:
        seen.append(speed)
        if speed >= 2.0:
            return SpeedVerdict(speed, BUSY, "this machine was too busy: the client's event loop woke 80 ms late")
        return SpeedVerdict(speed, PASS, "")

    found = SpeedSearch(measure, max_probes=8).run()
    assert seen == [1.0, 2.0, 2.0]
    assert found.failed is None and found.passed is not None and found.passed.speed == 1.0
    assert found.too_busy is not None and "too busy" in found.sentence()


def replay(latencies_ms: list[float], outcomes: list[str] | None = None, late_ms: float = 0.0, lag_ms=None):
    n = len(latencies_ms)
    intended = tuple(float(i) for i in range(n))
    sent = tuple(i + late_ms / 1000 for i in intended)
    ends = tuple(i + ms / 1000 for i, ms in zip(intended, latencies_ms, strict=True))
    call = TraceCall(0.0, "rerank", CallKind.RERANK, (10,))
    lag = None if lag_ms is None else histograms.encode(histograms.from_values([lag_ms * 1000.0] * 200))
    return RouteReplay("rerank", "rr", (call,) * n, intended, sent, ends, tuple(outcomes or ["ok"] * n), (1,) * n, lag)


def test_the_judge_names_the_route_and_figure_that_fail():
    slo = Slo(100.0)
    assert judge_replay(2.0, [replay([50.0] * 30)], slo).passed
    late = judge_replay(2.0, [replay([50.0] * 29 + [500.0])], slo)
    assert late.failed and late.reason == "rerank p99 370 ms passes 100 ms"
    growing = judge_replay(2.0, [replay([10.0 + 2 * i for i in range(30)])], slo)
    assert growing.failed and "unsteady" in growing.reason
    errors = judge_replay(2.0, [replay([10.0] * 30, ["ok"] * 29 + ["429"])], slo)
    assert errors.failed and "errors 1 of 30" in errors.reason


# The lag tolerance of a 100 ms SLO is 10 ms (bench/core/machine.py): 40 ms is well past it, 2 ms well under.
LAG_PAST_MS, LAG_UNDER_MS = 40.0, 2.0


def test_the_machine_share_is_the_loop_lag_or_sends_left_late():
    slo = Slo(100.0)
    assert machine_share([replay([50.0] * 200)], LAG_UNDER_MS, slo) == (0, None)
    late, why = machine_share([replay([50.0] * 200)], LAG_PAST_MS, slo)
    assert why is not None and why.startswith("this machine was too busy") and late == 0
    # every send 30 ms late, more than the 1% a p99 leaves above it, and deciding: 120 ms from the intended
    # time, 90 ms from when they left
    late, why = machine_share([replay([120.0] * 200, late_ms=30.0)], LAG_UNDER_MS, slo)
    assert late == 200 and why is not None and "200 of 200 sends" in why
    # as late, but the verdict is the same either way (50 ms, 20 ms from when they left): the endpoint's
    assert machine_share([replay([50.0] * 200, late_ms=30.0)], LAG_UNDER_MS, slo) == (200, None)


def test_a_failing_replay_the_client_could_not_carry_is_too_busy_not_a_failure():
    """p99 209 ms against a 100 ms SLO, measured while the client's loop woke 40 ms late: the machine's."""
    from bench.core.machine import MachineView
    from bench.sizing.budget import Budget
    from bench.sizing.trace_probe import TraceProber

    prober = TraceProber({}, [], Slo(100.0), 30.0, None, Budget(None), say=lambda text: None)  # type: ignore[arg-type]
    slow = [50.0] * 190 + [209.0] * 10
    verdict = prober.judged(1.0, [replay(slow, lag_ms=LAG_PAST_MS)], 12.0, MachineView(cores=2, load_start=12.0))
    assert verdict.outcome == BUSY and not verdict.failed and not verdict.passed
    assert verdict.probe is not None and verdict.probe.machine is not None and "load 12.0" in verdict.reason
    carried = prober.judged(1.0, [replay(slow, lag_ms=LAG_UNDER_MS)], 12.0, MachineView(cores=2))
    assert carried.failed and carried.probe is not None and carried.probe.percentile_ms == pytest.approx(209.0)


def test_after_a_signal_a_pass_measured_but_not_yet_taken_still_counts():
    """The signal came between the probe's line and the search's taking it: the best so far holds that pass; a
    failure not yet taken (it would have been measured again) is left out."""
    search = SpeedSearch(capacity_at(3.0))
    search.probes.append(SpeedVerdict(1.0, PASS, ""))
    search.passed = search.probes[0]
    search.adopt([probe(1.0, PASS, 50.0), probe(2.0, PASS, 60.0)])
    assert search.passed.speed == 2.0
    search.adopt([probe(1.0, PASS, 50.0), probe(4.0, FAIL, 150.0)])
    assert search.passed.speed == 2.0 and search.failed is None


def simulated(at_s, service_s: float, servers: int, speed: float) -> RouteReplay:
    """The replay a queue of `servers` FIFO slots would give (benchmarks/trace_size_truth.py's simulator)."""
    from benchmarks.trace_size_truth import fifo_latencies

    intended = np.asarray(at_s) / speed
    ends = intended + fifo_latencies(intended, np.full(len(intended), service_s), servers)
    call = TraceCall(0.0, "embedding", CallKind.EMBED, (10,))
    n = len(intended)
    return RouteReplay(
        "embedding", "fx", (call,) * n, tuple(intended), tuple(intended), tuple(ends), ("ok",) * n, (1,) * n
    )


def test_a_bursty_trace_whose_last_third_is_denser_is_steady_below_capacity():
    """Issue 45's bursty trace against 2 slots of 20 ms: its true steady-state p99 at ×2 is 276 ms (truth ×2.12 for
    300 ms); its last third is burstier, so its median latency there is 1.8× the first third's (the median rule
    failed ×1.5 and ×2 as an unsteady queue). Past capacity (×6.76) the queue grows and is still caught."""
    from benchmarks.trace_size_truth import bursty_arrivals, looped

    at = bursty_arrivals()
    assert judge_replay(2.0, [simulated(at, 0.02, 2, 2.0)], Slo(300.0)).passed
    constant = looped(np.arange(100) * 0.025, 2)  # 40/s against 1 slot of 10 ms: capacity ×2.5
    assert judge_replay(2.4, [simulated(constant, 0.01, 1, 2.4)], Slo(1000.0)).passed
    growing = judge_replay(2.6, [simulated(constant, 0.01, 1, 2.6)], Slo(1000.0))
    assert growing.failed and "unsteady" in growing.reason


# Past the 5 ms timer floor, under the 10 ms a 100 ms SLO tolerates: the client carried the window, but the host
# added up to this much to each wake-up (its own and a loopback endpoint's).
LAG_BETWEEN_MS = 8.0


def test_a_failure_within_the_machines_lag_of_the_slo_is_the_machines():
    """p99 104 ms against 100 ms while the client's loop woke 8 ms late at p99: the host's share could make the
    difference, so it is too busy, not the endpoint's failure; 2 ms (the timer's granularity) or a miss by more
    than the lag (p99 209 ms) stays a failure."""
    from bench.core.machine import MachineView
    from bench.sizing.budget import Budget
    from bench.sizing.trace_probe import TraceProber

    prober = TraceProber({}, [], Slo(100.0), 30.0, None, Budget(None), say=lambda text: None)  # type: ignore[arg-type]
    host = MachineView(cores=2, load_start=14.0)
    near = [50.0] * 190 + [104.0] * 10
    busy = prober.judged(2.0, [replay(near, lag_ms=LAG_BETWEEN_MS)], 12.0, host)
    assert busy.outcome == BUSY and "within the client's loop lag" in busy.reason and "load 14.0" in busy.reason
    assert busy.probe is not None and busy.probe.outcome == BUSY
    assert prober.judged(2.0, [replay(near, lag_ms=LAG_UNDER_MS)], 12.0, host).failed
    far = [50.0] * 190 + [209.0] * 10
    assert prober.judged(2.0, [replay(far, lag_ms=LAG_BETWEEN_MS)], 12.0, host).failed


def test_after_a_signal_a_pass_held_but_not_yet_judged_still_counts():
    """The signal came after the search held the probe (`_one` appended it) and before it judged it (`passed` set):
    the CI run's SIGTERM left `max_speed` empty beside a passing probe at ×1."""
    search = SpeedSearch(capacity_at(3.0))
    search.probes.append(SpeedVerdict(1.0, PASS, ""))  # held, not judged: search.passed still None
    search.adopt([probe(1.0, PASS, 50.0)])
    assert search.passed is not None and search.passed.speed == 1.0
