"""One `size --trace` probe: planned to fit the --max-time budget left, replayed through load's workers, judged —
the machine's share first (bench/sizing/trace_size.py) — and said as it runs.

A probe replays at least MIN_PROBE_CALLS calls: the trace looped end to end as often as that takes. Its length is
the schedule's span at its speed plus the overhead of a replay (worker processes started, the last answers
awaited), taken from the slowest probe so far (DEFAULT_OVERHEAD_S before the first). A probe that does not fit the
budget left is cut to the calls that do, as long as that leaves MIN_PROBE_CALLS; otherwise it is not started
(BudgetSpent: the search ends with its best so far). A replay still running when the budget ends is stopped: cut
short, it is no verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np

from bench.core.machine import MachineView, MachineWatch
from bench.endpoints.meter_trace import TraceCall
from bench.load import histograms
from bench.load.endpoint import LoadEndpoint
from bench.load.pool import worker_pool
from bench.load.trace_replay import RouteReplay, TraceSettings, replay_trace, schedule_s
from bench.load.workload import Workload
from bench.results.schema import SpeedOutcome, TraceSpeedProbe
from bench.sizing.budget import Budget, BudgetSpent
from bench.sizing.slo import Slo, sig3
from bench.sizing.trace_size import MIN_PROBE_CALLS, SpeedVerdict, judge_replay, machine_share, within_lag

DEFAULT_OVERHEAD_S = 5.0  # workers spawned and the last answers awaited, before a probe has shown its own
MIN_OVERHEAD_S = 1.0  # never planned below: the answers to the last sends take their time
OVERHEAD_MARGIN = 1.25  # on the slowest overhead seen: a busy machine's process start varies from probe to probe


@dataclass(frozen=True)
class ProbePlan:
    speed: float
    loops: int  # the trace played this many times end to end
    calls: int  # calls scheduled, every route
    window_s: float  # first to last intended send
    cut_s: float | None  # the replay's sends cut after this (TraceSettings.window_s); None: every loop whole


def plan_probe(calls: list[TraceCall], speed: float, left_s: float, overhead_s: float) -> ProbePlan:
    """The probe at `speed` that fits `left_s` with `overhead_s` beside it: whole, or cut to the calls that fit;
    BudgetSpent when fewer than MIN_PROBE_CALLS would."""
    loops = max(1, math.ceil(MIN_PROBE_CALLS / len(calls)))
    offsets = schedule_s(calls, loops) / speed
    room = left_s - overhead_s
    if offsets[-1] <= room:
        return ProbePlan(speed, loops, len(offsets), float(offsets[-1]), None)
    fits = int(np.count_nonzero(offsets <= room))
    if fits < min(MIN_PROBE_CALLS, len(offsets)):
        raise BudgetSpent(
            f"the budget (--max-time) was spent: {sig3(max(0.0, left_s))} s left, the probe at × {sig3(speed)} "
            f"needs ≈ {sig3(float(offsets[min(MIN_PROBE_CALLS, len(offsets)) - 1]) + overhead_s)} s"
        )
    return ProbePlan(speed, loops, fits, float(offsets[fits - 1]), room)


def probe_record(
    verdict: SpeedVerdict, replays: list[RouteReplay], slo: Slo, seconds: float, late: int, lag_p99_ms: float | None
) -> TraceSpeedProbe:
    """What the replay measured, every route together: its calls, offered and carried rates, the slowest route's
    SLO percentile."""
    intended = np.concatenate([np.asarray(r.intended_s, dtype=float) for r in replays])
    sent = np.concatenate([np.asarray(r.sent_s, dtype=float) for r in replays])
    sent = sent[np.isfinite(sent)]
    window = float(intended.max() - intended.min()) if intended.size > 1 else 0.0
    sending = float(sent.max() - intended.min()) if sent.size > 1 else 0.0
    answered = [r.latencies_s[r.answered] for r in replays]
    at = [float(np.percentile(a, slo.percentile) * 1000) for a in answered if a.size]
    return TraceSpeedProbe(
        speed=verdict.speed,
        outcome=verdict.outcome,
        reason=verdict.reason,
        calls=int(intended.size),
        window_s=round(window, 3),
        seconds=round(seconds, 2),
        offered_per_s=round(intended.size / window, 3) if window > 0 else 0.0,
        carried_per_s=round(sent.size / sending, 3) if sending > 0 else None,
        percentile_ms=round(max(at), 2) if at else None,
        late_sends=late,
        loop_lag_p99_ms=lag_p99_ms,
    )


@dataclass
class TraceProber:
    """Measures one speed at a time for SpeedSearch, within `budget`, each probe said before and after."""

    endpoints: dict[str, LoadEndpoint]
    calls: list[TraceCall]
    slo: Slo
    timeout_s: float
    workload: Workload
    budget: Budget
    say: Callable[[str], None] = print
    executor_of: Callable[[int], Executor] = worker_pool
    overheads: list[float] = field(default_factory=list)  # each probe's seconds past its window
    #: every replay measured, in order, kept before it is said: a signal between the line and the search's taking
    #: it still finds it in the record
    measured: list[TraceSpeedProbe] = field(default_factory=list)
    #: the worker processes, kept from probe to probe (started once: seconds a probe on a busy machine); None until
    #: the first probe, and after a replay that stopped them
    pool: Executor | None = None

    @property
    def overhead_s(self) -> float:
        if not self.overheads:
            return DEFAULT_OVERHEAD_S
        return max(MIN_OVERHEAD_S, OVERHEAD_MARGIN * max(self.overheads))

    def clock(self) -> str:
        left = self.budget.left()
        return f"{sig3(self.budget.spent)} s spent" + ("" if math.isinf(left) else f", {sig3(max(0, left))} s left")

    def expected_text(self, max_probes: int) -> str:
        """The time expected, said before the first probe."""
        one = plan_probe(self.calls, 1.0, math.inf, self.overhead_s)
        each = one.window_s + self.overhead_s
        budget = (
            "no --max-time: the search runs to its end"
            if self.budget.seconds is None
            else f"--max-time {sig3(self.budget.seconds)} s: each probe fits what is left, the answer is the best "
            "so far when the next does not"
        )
        return (
            f"size --trace: a probe replays {one.calls} calls ({one.loops} × the trace's {len(self.calls)}), "
            f"≈ {sig3(each)} s at × 1 (twice that at × 0.5, half at × 2); at most {max_probes} speeds, a failure "
            f"measured up to 3 times: ≈ {sig3(max_probes * each)} s expected; {budget}"
        )

    def measure(self, speed: float) -> SpeedVerdict:
        plan = plan_probe(self.calls, speed, self.budget.left(), self.overhead_s)
        cut = "" if plan.cut_s is None else " (cut to the budget left)"
        self.say(
            f"size --trace: × {sig3(speed)}: {plan.calls} calls over {sig3(plan.window_s)} s{cut}, ≈ "
            f"{sig3(plan.window_s + self.overhead_s)} s with the workers' start and the last answers; {self.clock()}"
        )
        watch, started = MachineWatch.start(), self.budget.clock()  # the budget's clock: one time for both
        settings = TraceSettings(speed, plan.loops, self.timeout_s, plan.cut_s)
        try:
            replays = replay_trace(
                self.endpoints, self.calls, settings, self.workload, self.workers, lambda: self.budget.require(0), False
            )
        except BudgetSpent as spent:
            self.pool = None  # stopped by the replay
            return self.cut(plan, started, str(spent))
        except BaseException:
            self.pool = None  # stopped by the replay that failed
            raise
        seconds = self.budget.clock() - started
        self.overheads.append(max(0.0, seconds - plan.window_s))
        return self.judged(speed, replays, seconds, watch.stop())

    def workers(self, count: int) -> Executor:
        """The kept pool (started now if none is)."""
        if self.pool is None:
            self.pool = self.executor_of(count)
        return self.pool

    def close(self) -> None:
        """The kept pool's workers ended (they are idle between probes: shut down, not terminated)."""
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None

    def cut(self, plan: ProbePlan, started: float, why: str) -> SpeedVerdict:
        """A replay the budget stopped: recorded as planned, no verdict."""
        offered = plan.calls / plan.window_s if plan.window_s > 0 else 0.0
        seconds = round(self.budget.clock() - started, 2)
        probe = TraceSpeedProbe(
            plan.speed, SpeedOutcome.CUT, why, plan.calls, plan.window_s, seconds, offered, None, None, 0, None
        )
        self.measured.append(probe)
        self.say(f"size --trace: × {sig3(plan.speed)}: cut short, no verdict: {why} — {self.clock()}")
        return SpeedVerdict(plan.speed, SpeedOutcome.CUT, f"cut short: {why}", probe)

    def judged(self, speed: float, replays: list[RouteReplay], seconds: float, machine: MachineView) -> SpeedVerdict:
        """The machine's share first, then the endpoint's verdict; said with the probe's figures."""
        lag = histograms.summary_ms(histograms.merge([r.loop_lag for r in replays]))
        lag_p99 = None if lag is None else lag.p99
        late, busy = machine_share(replays, lag_p99, self.slo, machine)
        verdict = judge_replay(speed, replays, self.slo)
        probe = probe_record(verdict, replays, self.slo, seconds, late, lag_p99)
        busy = busy or within_lag(verdict, probe.percentile_ms, lag_p99, self.slo, machine)
        if busy is not None:
            verdict = SpeedVerdict(speed, SpeedOutcome.TOO_BUSY, busy)
            probe.outcome, probe.reason = verdict.outcome, verdict.reason
        probe.machine = machine
        self.measured.append(probe)
        self.say(self.line(probe))
        return SpeedVerdict(speed, verdict.outcome, verdict.reason, probe)

    def line(self, p: TraceSpeedProbe) -> str:
        figure = "-" if p.percentile_ms is None else f"{sig3(p.percentile_ms)} ms"
        carried = "-" if p.carried_per_s is None else sig3(p.carried_per_s)
        lag = "" if p.loop_lag_p99_ms is None else f", loop lag p99 {sig3(p.loop_lag_p99_ms)} ms"
        host = "" if p.machine is None else f", {p.machine.text()}"
        return (
            f"size --trace: × {sig3(p.speed)}: {self.slo.name} {figure} (SLO {sig3(self.slo.ms)} ms), "
            f"{sig3(p.offered_per_s)}/s offered, {carried}/s carried{lag}{host}: "
            f"{p.outcome.value}{': ' + p.reason if p.reason else ''} — {self.clock()}"
        )
