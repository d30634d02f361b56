"""`size --trace FILE`: the largest speed-up of a recorded trace that meets the SLO on every route.

Each probe replays the trace at speed X (`load --trace`'s replay, looped to at least MIN_PROBE_CALLS calls, cut to
what the --max-time budget holds: bench/sizing/trace_probe.py) and is judged by size's goodput rules: every route's
`scheduled` percentile under the SLO, its errors within the error limit, and its queue steady (the last third's
fastest calls, STEADY_QUANTILE, not slower than STEADY_GROWTH times the first third's: a queue that grows through
the probe would fail a longer one). Before any of that, the machine's share (bench/core/machine.py): a replay whose
client could not carry its window — its event loop woke later than the SLO tolerates, or more of its sends left
that late than the SLO's percentile leaves above it and they decide the verdict — is "this machine was too busy",
never a pass and never a failure; it is measured once more, and a second such replay ends the search with that
said. A failing probe near the SLO (its percentile within RECHECK_BAND of it, or failed on errors or an unsteady
queue) is measured again and a third measurement decides where the two disagree (bench/sizing/search.py's rule).

The search (SpeedSearch): ×1 first — the traffic as recorded. When it passes the speed grows ×2 until a probe fails;
when it fails, the speed halves (×0.5, ×0.25, … to MIN_SPEED) until one passes: how much of the traffic fits now,
and ceil(1 / that) replicas carry it. Then the pass and the failure are bisected (arithmetic midpoints: ×0.5 and ×1
give ×0.75) until they are within PRECISION. The budget ends the search between probes (BudgetSpent, raised by the
measurement that does not fit) with the best so far.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from bench.core.machine import BUSY_LAG_FLOOR_MS, MachineView, lag_limit_ms, too_busy
from bench.load.trace_replay import RouteReplay
from bench.results.schema import SpeedOutcome, TraceSpeedProbe
from bench.sizing.budget import BudgetSpent
from bench.sizing.slo import Slo, sig3

PRECISION = 0.05  # the bisection stops when lowest failure / highest pass is within 1 + this
MAX_SPEED = 1024.0
MIN_SPEED = 1.0 / 64  # the halving from a failing ×1 stops here: below it nothing of the traffic fits
# A failure whose percentile is past this many times the SLO is not measured again: a window the client carried
# (the machine's share is checked first) does not miss by that much by chance, and a second look at a clear
# failure spent a budget's probe (issue 45: ×1 measured twice left no time to bisect down).
RECHECK_BAND = 1.25
# A queue is growing when the calls that find it short grow slower: the last third's 10th percentile of latency
# past 1.5 times the first third's (and by more than 5 ms, a timer's granularity). A steady queue, however bursty
# its traffic, has calls that find the servers idle in every third; a growing one has none late in the probe. (The
# median compared the trace's own structure: a bursty trace whose last third is denser failed at ×1.5 with a true
# steady-state p99 of 208 ms against a 300 ms SLO: issue 45, benchmarks/trace_size_truth.py `bursty`.)
STEADY_QUANTILE = 10.0
STEADY_GROWTH = 1.5
STEADY_FLOOR_MS = 5.0
MIN_PROBE_CALLS = 200


@dataclass(frozen=True)
class SpeedVerdict:
    speed: float
    outcome: SpeedOutcome
    reason: str  # why it failed or was the machine's ("" when it passed): the route and the figure
    probe: TraceSpeedProbe | None = None  # what the replay measured (None: a verdict built without one, in tests)

    @property
    def passed(self) -> bool:
        return self.outcome == SpeedOutcome.PASS

    @property
    def failed(self) -> bool:
        return self.outcome == SpeedOutcome.FAIL


@dataclass(frozen=True)
class TraceSize:
    """The search's answer: the highest standing pass and the lowest failure (None: none found), and why the
    search ended on the machine (too busy) if it did."""

    passed: SpeedVerdict | None
    failed: SpeedVerdict | None
    probes: tuple[SpeedVerdict, ...]
    too_busy: SpeedVerdict | None = None

    def replicas(self, target_speed: float = 1.0) -> int | None:
        """Replicas of the endpoint that carry the trace at `target_speed`, each taking the highest passing speed."""
        if self.passed is None:
            return None
        return max(1, math.ceil(target_speed / self.passed.speed - 1e-9))

    def sentence(self) -> str:
        if self.passed is None:
            fits = f"no speed of your traffic down to × {sig3(MIN_SPEED)} fits" if self.failed else "nothing judged yet"
        elif self.passed.speed < 1:
            fits = (
                f"your traffic as recorded does not fit: × {sig3(self.passed.speed)} of it fits "
                f"({self.replicas(1.0)} replica(s) carry it)"
            )
        else:
            fits = f"your traffic × {sig3(self.passed.speed)} fits"
        fails = "" if self.failed is None else f"; at × {sig3(self.failed.speed)} {self.failed.reason}"
        busy = "" if self.too_busy is None else f"; at × {sig3(self.too_busy.speed)} {self.too_busy.reason}"
        return f"{fits} on this endpoint{fails}{busy}"


def machine_share(
    replays: list[RouteReplay], lag_p99_ms: float | None, slo: Slo, machine: MachineView | None = None
) -> tuple[int, str | None]:
    """(sends later than the SLO tolerates, why the window is the machine's or None). Too busy: the client's loop
    lag p99 past the SLO's tolerance (bench/core/machine.py too_busy), or more sends that late than the share the
    SLO's percentile leaves above it, when they decide the verdict (timed from when they left, it would differ)."""
    limit_s = lag_limit_ms(slo.ms) / 1000
    sent = sum(len(r.sent_s) for r in replays)
    late = sum(int(np.count_nonzero(np.asarray(r.sent_s) - np.asarray(r.intended_s) > limit_s)) for r in replays)
    why = too_busy(lag_p99_ms, slo.ms, machine)
    if why is None and sent and late / sent > (100.0 - slo.percentile) / 100.0 and _late_decides(replays, slo):
        host = f" ({machine.text()})" if machine is not None else ""
        why = (
            f"this machine was too busy: {late} of {sent} sends left more than {limit_s * 1000:.0f} ms after their "
            f"time, more than the {100 - slo.percentile:g}% a {slo.name} leaves above it, and timed from when they "
            f"left the verdict differs{host}"
        )
    return late, why


def within_lag(
    verdict: SpeedVerdict,
    figure_ms: float | None,
    lag_p99_ms: float | None,
    slo: Slo,
    machine: MachineView | None = None,
) -> str | None:
    """Why a failure on the percentile is the machine's: the figure less the client's loop lag p99 (what this host
    adds to a wake-up, past the timer's own granularity) would meet the SLO — the endpoint on a loopback host
    waits for the same CPUs. None: the failure stands (or it is no such failure)."""
    if not verdict.failed or figure_ms is None or lag_p99_ms is None or "passes" not in verdict.reason:
        return None
    if lag_p99_ms <= BUSY_LAG_FLOOR_MS or figure_ms - lag_p99_ms > slo.ms:
        return None
    host = f" ({machine.text()})" if machine is not None else ""
    return (
        f"this machine was too busy: {slo.name} {sig3(figure_ms)} ms is within the client's loop lag "
        f"({sig3(lag_p99_ms)} ms at p99) of the {sig3(slo.ms)} ms SLO{host}"
    )


def _late_decides(replays: list[RouteReplay], slo: Slo) -> bool:
    """Whether the verdict timed from each call's intended send differs from the one timed from when it left: the
    client's lateness, not the endpoint, would decide it (a send that never left keeps its intended time)."""

    def from_sent(r: RouteReplay) -> RouteReplay:
        sent = np.asarray(r.sent_s, dtype=float)
        left = np.where(np.isfinite(sent), np.maximum(sent, r.intended_s), r.intended_s)
        return replace(r, intended_s=tuple(left.tolist()))

    return judge_replay(1.0, replays, slo).outcome != judge_replay(1.0, [from_sent(r) for r in replays], slo).outcome


def judge_replay(speed: float, replays: list[RouteReplay], slo: Slo) -> SpeedVerdict:
    """Every route under the SLO, within the error limit and steady: the first that is not says why."""
    for replay in replays:
        latencies = replay.latencies_s
        ok = replay.answered
        errors = int(np.count_nonzero(~ok))
        # no answer at all fails whatever the error limit (--max-error-rate 1 allows every call to fail): there is
        # no latency to judge
        if not ok.any() or errors / latencies.size > slo.max_error_rate:
            return SpeedVerdict(speed, SpeedOutcome.FAIL, f"{replay.route} errors {errors} of {latencies.size}")
        at = float(np.percentile(latencies[ok], slo.percentile) * 1000)
        if at > slo.ms:
            return SpeedVerdict(
                speed, SpeedOutcome.FAIL, f"{replay.route} {slo.name} {sig3(at)} ms passes {sig3(slo.ms)} ms"
            )
        third = max(1, latencies.size // 3)
        first = float(np.percentile(latencies[:third], STEADY_QUANTILE))
        last = float(np.percentile(latencies[-third:], STEADY_QUANTILE))
        if last > STEADY_GROWTH * first and last - first > STEADY_FLOOR_MS / 1000 and latencies.size >= 6:
            return SpeedVerdict(
                speed, SpeedOutcome.FAIL, f"{replay.route} latency grows through the probe (unsteady queue)"
            )
    return SpeedVerdict(speed, SpeedOutcome.PASS, "")


@dataclass
class SpeedSearch:
    """The search's state as it goes: a signal or the budget reads its best so far (`answer`) at any time."""

    measure: Callable[[float], SpeedVerdict]  # raises BudgetSpent when the probe does not fit what is left
    max_probes: int = 12  # speeds tried at most
    slo_ms: float | None = None  # the SLO's latency: a failure past RECHECK_BAND of it stands (None: all re-measured)
    probes: list[SpeedVerdict] = field(default_factory=list)
    passed: SpeedVerdict | None = None
    failed: SpeedVerdict | None = None
    too_busy: SpeedVerdict | None = None
    tried: int = 0

    def answer(self) -> TraceSize:
        return TraceSize(self.passed, self.failed, tuple(self.probes), self.too_busy)

    def adopt(self, measured: list[TraceSpeedProbe]) -> None:
        """After a signal: a pass measured but not yet taken by the search (the signal came between the two: before
        the search held the probe, or after it held it and before it judged it) still counts; a failure not yet taken
        would have been measured again, so it is left out of the answer. Every probe is looked at: one already taken
        changes nothing."""
        for probe in measured:
            inside = self.failed is None or probe.speed < self.failed.speed
            if (
                probe.outcome == SpeedOutcome.PASS
                and inside
                and (self.passed is None or probe.speed > self.passed.speed)
            ):
                self.passed = SpeedVerdict(probe.speed, SpeedOutcome.PASS, "", probe)

    def run(self) -> TraceSize:
        """×1, then ×2 up from a pass or halves down from a failure, then bisection; BudgetSpent goes on."""
        if self._judged(1.0) is None:
            return self.answer()
        step = 2.0 if self.failed is None else 0.5
        speed = step
        while self._bracket_open() and MIN_SPEED <= speed <= MAX_SPEED and self.tried < self.max_probes:
            if self._judged(speed) is None:
                return self.answer()
            speed *= step
        while self._wide() and self.tried < self.max_probes:
            assert self.passed is not None and self.failed is not None
            if self._judged((self.passed.speed + self.failed.speed) / 2) is None:
                return self.answer()
        return self.answer()

    def _bracket_open(self) -> bool:
        return self.passed is None or self.failed is None

    def _wide(self) -> bool:
        return (
            self.passed is not None
            and self.failed is not None
            and self.failed.speed / self.passed.speed > 1 + PRECISION
        )

    def _one(self, speed: float) -> SpeedVerdict:
        verdict = self.measure(speed)
        self.probes.append(verdict)
        if verdict.outcome == SpeedOutcome.CUT:
            raise BudgetSpent(verdict.reason)
        return verdict

    def _judged(self, speed: float) -> SpeedVerdict | None:
        """The speed's standing verdict: too busy measured once more, a failure measured again and a third
        deciding a disagreement; None: the machine was too busy twice (the search ends, said)."""
        self.tried += 1
        verdict = self._one(speed)
        if verdict.outcome == SpeedOutcome.TOO_BUSY:
            self.too_busy = verdict  # stands while the budget allows no second look
            verdict = self._one(speed)
            if verdict.outcome == SpeedOutcome.TOO_BUSY:
                self.too_busy = verdict
                return None
            self.too_busy = None
        if verdict.failed:
            before, self.failed = self.failed, verdict  # stands while the budget allows no second look
            again = self._one(speed) if self._near(verdict) else verdict
            if again.passed and self._one(speed).passed:
                self.failed, verdict = before, again
        if verdict.passed:
            self.passed = verdict
        return verdict

    def _near(self, verdict: SpeedVerdict) -> bool:
        """A failure worth a second look: not one whose percentile missed the SLO by more than RECHECK_BAND."""
        figure = None if verdict.probe is None else verdict.probe.percentile_ms
        if self.slo_ms is None or figure is None or "passes" not in verdict.reason:
            return True
        return figure <= RECHECK_BAND * self.slo_ms
