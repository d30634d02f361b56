"""`size --trace`: the speed search (grow ×2, bisect to PRECISION, failures measured again), the judge, replicas."""

from __future__ import annotations

import math

import pytest

from bench.endpoints.meter_trace import CallKind, TraceCall
from bench.load.trace_replay import RouteReplay
from bench.sizing.slo import Slo
from bench.sizing.trace_size import PRECISION, SpeedVerdict, judge_replay, search_speed


def capacity_at(limit: float):
    def measure(speed: float) -> SpeedVerdict:
        return SpeedVerdict(speed, speed <= limit, "" if speed <= limit else "p99 past the SLO")

    return measure


@pytest.mark.parametrize("limit", [0.3, 1.0, 3.4, 37.0])
def test_the_search_brackets_the_capacity_within_its_precision(limit: float):
    found = search_speed(capacity_at(limit), max_probes=30)
    assert found.passed is not None and found.failed is not None
    assert found.passed.speed <= limit < found.failed.speed
    assert found.failed.speed / found.passed.speed <= 1 + PRECISION
    assert found.replicas(3.0) == math.ceil(3.0 / found.passed.speed)


def test_a_failure_is_measured_again_and_a_third_decides():
    answers = iter([True, False, True, False])  # ×1 passes; ×2 fails, passes, fails: a failure
    seen: list[float] = []

    def measure(speed: float) -> SpeedVerdict:
        seen.append(speed)
        return SpeedVerdict(speed, next(answers, False), "")

    found = search_speed(measure, max_probes=2)
    assert seen == [1.0, 2.0, 2.0, 2.0] and found.passed is not None and found.passed.speed == 1.0


def replay(latencies_ms: list[float], outcomes: list[str] | None = None) -> RouteReplay:
    n = len(latencies_ms)
    intended = tuple(float(i) for i in range(n))
    ends = tuple(i + ms / 1000 for i, ms in zip(intended, latencies_ms, strict=True))
    call = TraceCall(0.0, "rerank", CallKind.RERANK, (10,))
    return RouteReplay("rerank", "rr", (call,) * n, intended, intended, ends, tuple(outcomes or ["ok"] * n), (1,) * n)


def test_the_judge_names_the_route_and_figure_that_fail():
    slo = Slo(100.0)
    assert judge_replay(2.0, [replay([50.0] * 30)], slo).passed
    late = judge_replay(2.0, [replay([50.0] * 29 + [500.0])], slo)
    assert not late.passed and late.reason == "rerank p99 370 ms passes 100 ms"
    growing = judge_replay(2.0, [replay([10.0 + 2 * i for i in range(30)])], slo)
    assert not growing.passed and "unsteady" in growing.reason
    errors = judge_replay(2.0, [replay([10.0] * 30, ["ok"] * 29 + ["429"])], slo)
    assert not errors.passed and "errors 1 of 30" in errors.reason
