"""`size --trace --max-time`: every probe planned to fit the budget left (cut to what fits, or not started), a
replay still running when the budget ends cut short and no verdict — on what the code controls (the plans, a
clock the test moves), never on the wall clock (issue 45: --max-time 240s ran 420 s)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.endpoints.meter_trace import CallKind, TraceCall
from bench.load.trace_replay import RouteReplay, TraceSettings
from bench.results.schema import SpeedOutcome
from bench.sizing.budget import Budget, BudgetSpent
from bench.sizing.slo import Slo
from bench.sizing.trace_probe import MIN_PROBE_CALLS, TraceProber, plan_probe, schedule_s
from bench.sizing.trace_size import SpeedSearch


def trace(calls: int, rate: float) -> list[TraceCall]:
    gaps = np.random.default_rng(3).exponential(1 / rate, calls)
    return [TraceCall(float(t), "embedding", CallKind.EMBED, (40,)) for t in np.cumsum(gaps)]


LONG = trace(1000, 10.0)  # ≈ 100 s at ×1: a probe of it may be cut
SHORT = trace(120, 15.0)  # looped to MIN_PROBE_CALLS


@pytest.mark.parametrize("calls", [LONG, SHORT], ids=["long", "short"])
@pytest.mark.parametrize("speed", [0.25, 0.5, 1.0, 2.0, 8.0])
@pytest.mark.parametrize("left_s", [5.0, 20.0, 45.0, 90.0, 400.0])
def test_a_planned_probe_fits_the_budget_left_or_is_not_started(calls, speed: float, left_s: float):
    overhead_s = 5.0
    try:
        plan = plan_probe(calls, speed, left_s, overhead_s)
    except BudgetSpent as spent:
        assert "spent" in str(spent)
        return
    assert plan.window_s + overhead_s <= left_s
    assert plan.calls >= MIN_PROBE_CALLS
    offsets = schedule_s(calls, plan.loops) / speed
    if plan.cut_s is None:  # whole: every loop's calls
        assert plan.calls == len(offsets) and plan.window_s == pytest.approx(offsets[-1])
    else:
        assert plan.calls == np.count_nonzero(offsets <= plan.cut_s) < len(offsets)


class FakeTime:
    """The budget's clock, moved by the fake replay: a replay takes its window plus `overhead_s`."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_replay(clock: FakeTime, capacity: float, overhead_s: float, planned: list[tuple[float, float]]):
    """replay_trace's stand-in: moves the clock through the window (calling `tick` as the pool does), answers
    under the SLO below `capacity` and past it above."""

    def replay(endpoints, calls, settings: TraceSettings, workload, executor_of, tick, owned=True):
        offsets = schedule_s(calls, settings.loops) / settings.speed
        if settings.window_s is not None:
            offsets = offsets[offsets <= settings.window_s]
        planned.append((clock.now, float(offsets[-1])))
        end = clock.now + float(offsets[-1]) + overhead_s
        while clock.now < end:
            clock.now = min(end, clock.now + 0.2)
            tick()
        latency = 0.02 if settings.speed <= capacity else 0.5
        intended = tuple(offsets.tolist())
        ends = tuple(t + latency for t in intended)
        n = len(intended)
        return [RouteReplay("embedding", "fx", tuple(calls), intended, intended, ends, ("ok",) * n, (1,) * n)]

    return replay


@pytest.mark.parametrize("max_time_s", [60.0, 150.0, 240.0])
@pytest.mark.parametrize("capacity", [0.6, 2.3])
def test_the_search_keeps_its_budget(monkeypatch, max_time_s: float, capacity: float):
    """Every probe started fits the time left (window + the overhead planned), and the search ends within the
    budget: the clock it ran on never passes --max-time less the report's reserve."""
    import bench.sizing.trace_probe as trace_probe

    clock, planned = FakeTime(), []
    budget = Budget(max_time_s, clock=clock, reserve_s=0.1 * max_time_s)
    # 3 s of overhead a replay: under the 5 s planned before the first one, then learnt from it.
    monkeypatch.setattr(trace_probe, "replay_trace", fake_replay(clock, capacity, 3.0, planned))
    prober = TraceProber({}, LONG, Slo(100.0), 30.0, None, budget, say=lambda text: None)  # type: ignore[arg-type]
    search = SpeedSearch(prober.measure, max_probes=12, slo_ms=100.0)
    with pytest.raises(BudgetSpent):
        search.run()
    assert planned, "no probe fitted"
    for started, window in planned:
        assert started + window + 3.0 <= max_time_s - budget.reserve_s + 1e-9
    assert clock.now <= max_time_s - budget.reserve_s
    assert all(p.outcome != SpeedOutcome.CUT for p in search.probes)


def test_a_replay_the_budget_ends_is_cut_short_and_no_verdict(monkeypatch):
    """The replay takes longer than planned (a machine slower than the probes before): the budget's end stops it,
    and what it measured is neither a pass nor a failure."""
    import bench.sizing.trace_probe as trace_probe

    clock, planned = FakeTime(), []
    budget = Budget(60.0, clock=clock)
    monkeypatch.setattr(trace_probe, "replay_trace", fake_replay(clock, 10.0, 55.0, planned))  # 13 s window + 55 s
    prober = TraceProber({}, SHORT, Slo(100.0), 30.0, None, budget, say=lambda text: None)  # type: ignore[arg-type]
    search = SpeedSearch(prober.measure, max_probes=12, slo_ms=100.0)
    with pytest.raises(BudgetSpent):
        search.run()
    assert [p.outcome for p in search.probes] == [SpeedOutcome.CUT]
    assert search.passed is None and search.failed is None
    assert clock.now <= 60.0 + 0.2  # stopped at the first tick past the budget
