"""`size --trace FILE`: the largest speed-up of a recorded trace that meets the SLO on every route.

Each probe replays the trace at speed X (`load --trace`'s replay, looped to at least MIN_PROBE_CALLS calls) and is
judged by size's goodput rules: every route's `scheduled` percentile under the SLO, its errors within the error limit,
and its queue steady (the last third of the calls not slower than STEADY_GROWTH times the first third: a queue that
grows through the probe would fail a longer one). A failing probe is measured again and a third measurement decides
where the two disagree (bench/sizing/search.py's rule). The speed grows ×2 from 1 until a probe fails, then is
bisected until the highest pass and the lowest failure are within PRECISION.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.load.trace_replay import RouteReplay
from bench.sizing.slo import Slo, sig3

PRECISION = 0.05  # the bisection stops when lowest failure / highest pass is within 1 + this
MAX_SPEED = 1024.0
STEADY_GROWTH = 1.5  # last third's median latency over the first third's, past which the queue is growing
MIN_PROBE_CALLS = 200


@dataclass(frozen=True)
class SpeedVerdict:
    speed: float
    passed: bool
    reason: str  # why it failed ("" when it passed): the route and the figure


@dataclass(frozen=True)
class TraceSize:
    """The search's answer: the highest standing pass and the lowest failure (None: none found)."""

    passed: SpeedVerdict | None
    failed: SpeedVerdict | None
    probes: tuple[SpeedVerdict, ...]

    def replicas(self, target_speed: float) -> int | None:
        """Replicas of the endpoint that carry the trace at `target_speed`, each taking the highest passing speed."""
        if self.passed is None:
            return None
        return max(1, math.ceil(target_speed / self.passed.speed - 1e-9))

    def sentence(self) -> str:
        fits = (
            "no speed of your traffic fits" if self.passed is None else f"your traffic × {sig3(self.passed.speed)} fits"
        )
        fails = "" if self.failed is None else f"; at × {sig3(self.failed.speed)} {self.failed.reason}"
        return f"{fits} on this endpoint{fails}"


def judge_replay(speed: float, replays: list[RouteReplay], slo: Slo) -> SpeedVerdict:
    """Every route under the SLO, within the error limit and steady: the first that is not says why."""
    for replay in replays:
        latencies = replay.latencies_s
        ok = np.asarray([o == "ok" for o in replay.outcomes], dtype=bool)
        errors = int(np.count_nonzero(~ok))
        if not latencies.size or errors / latencies.size > slo.max_error_rate:
            return SpeedVerdict(speed, False, f"{replay.route} errors {errors} of {latencies.size}")
        at = float(np.percentile(latencies[ok], slo.percentile) * 1000)
        if at > slo.ms:
            return SpeedVerdict(speed, False, f"{replay.route} {slo.name} {sig3(at)} ms passes {sig3(slo.ms)} ms")
        third = max(1, latencies.size // 3)
        first, last = float(np.median(latencies[:third])), float(np.median(latencies[-third:]))
        if last > STEADY_GROWTH * first and latencies.size >= 6:
            return SpeedVerdict(speed, False, f"{replay.route} latency grows through the probe (unsteady queue)")
    return SpeedVerdict(speed, True, "")


def _judged(measure: Callable[[float], SpeedVerdict], speed: float, probes: list[SpeedVerdict]) -> SpeedVerdict:
    """A failure measured again, a third deciding a disagreement."""
    verdicts = [measure(speed)]
    if not verdicts[0].passed:
        verdicts.append(measure(speed))
        if verdicts[1].passed:
            verdicts.append(measure(speed))
    probes.extend(verdicts)
    return verdicts[-1]


def search_speed(measure: Callable[[float], SpeedVerdict], max_probes: int = 12) -> TraceSize:
    """Grow ×2 from speed 1 until a failure, then bisect (geometrically) to PRECISION, at most `max_probes` speeds."""
    probes: list[SpeedVerdict] = []
    passed: SpeedVerdict | None = None
    failed: SpeedVerdict | None = None
    speed, tried = 1.0, 0
    while failed is None and speed <= MAX_SPEED and tried < max_probes:
        verdict, tried = _judged(measure, speed, probes), tried + 1
        passed, failed = (verdict, None) if verdict.passed else (passed, verdict)
        speed *= 2.0
    low = passed.speed if passed is not None else 1.0 / 64
    while failed is not None and failed.speed / low > 1 + PRECISION and tried < max_probes:
        speed = math.sqrt(low * failed.speed)
        verdict, tried = _judged(measure, speed, probes), tried + 1
        if verdict.passed:
            passed, low = verdict, speed
        else:
            failed = verdict
    return TraceSize(passed, failed, tuple(probes))
