"""`load --interleave`: every point of the plan measured on two endpoints in alternating windows, round after
round, the order within each round drawn at random (seeded), so that drift on a shared machine falls on both
sides of every round alike.

    run_interleave(specs, plan, workload, output, pair)   # plan.repeat: the rounds; plan.base.duration_s: the window

Each window is a point as `load` measures it (warm-up, measured window, drain: bench/load/measure.py). Once a
point's rounds are done, each endpoint's windows are pooled into its `load_point` record (one repeat per round,
in round order: bench/load/repeats.py) and `pair(point, a_windows, b_windows, firsts)` makes the point's paired
record (the gate's statistics live above this layer). Whatever stops the rounds (Ctrl-C, a dead server, a window
too short), what was measured is written.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path

from bench.core.errors import UserError
from bench.core.resample import seeded_generator
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.measure import measure_point, stop_if_unreachable
from bench.load.plan import SweepPlan
from bench.load.points import PointConfig, point_label
from bench.load.pool import load_pool
from bench.load.repeats import REPEAT_SEED_STRIDE, pooled
from bench.load.sweep import load_header, ticker
from bench.load.workload import Workload
from bench.results.lifecycle import OpenRun, open_run
from bench.results.lifecycle import Output as RunOutput
from bench.results.schema import EndStatus, LoadPointRecord, RunCommand
from bench.results.store import Results

Pair = Callable[[PointConfig, list[LoadPointRecord], list[LoadPointRecord], list[str]], object]


@dataclass
class Rounds:
    """One point's windows so far: each endpoint's, in round order, and which endpoint went first in each."""

    a: list[LoadPointRecord]
    b: list[LoadPointRecord]
    firsts: list[str]


def run_interleave(
    specs: list[EndpointSpec],
    plan: SweepPlan,
    workload: Workload,
    output: RunOutput,
    pair: Pair,
    on_point: Callable[[LoadPointRecord], None] = lambda record: None,
    pool_factory: Callable[[int], Executor] | None = None,
) -> Path:
    """Every point on `specs` (baseline, candidate) in `plan.repeat` rounds of one window each; checked and
    preflighted before `output` is touched: a window shorter than the idle server's answer to one request is one
    line, nothing written."""
    base = plan.base
    endpoints = open_endpoints(specs, base.op, base.timeout_s)
    try:
        check_window(endpoints, base.duration_s or 0.0)
        settings = {"op": base.op, "points": len(plan.points), "interleave": True, "rounds": plan.repeat}
        settings |= {"workers": base.workers, "warmup_s": base.warmup_s, "window_s": base.duration_s}
        settings["timeout_s"] = base.timeout_s
        with (
            open_run(output, load_header(RunCommand.LOAD, workload, specs, base.seed, settings)) as run,
            load_pool(endpoints, base.op, base.workers, pool_factory) as pool,
        ):
            for index, point in enumerate(plan.points):
                _point_rounds(endpoints, (index, point), plan, workload, pool, run, pair, on_point)
    finally:
        close_endpoints(endpoints)
    return output.results


def check_window(endpoints: list[LoadEndpoint], window_s: float) -> None:
    """A window must hold at least one answer: the preflight's idle probe (one tiny request) is the least a
    request of the plan's batch takes."""
    for endpoint in endpoints:
        took = endpoint.idle_probe_s
        if took is not None and window_s < took:
            raise UserError(
                f"load --interleave: --window {window_s:g}s is shorter than one request to {endpoint.spec.name} "
                f"takes on the idle server ({took * 1000:.0f} ms for one short text); give a longer --window"
            )


def _point_rounds(
    endpoints: list[LoadEndpoint],
    numbered: tuple[int, PointConfig],
    plan: SweepPlan,
    workload: Workload,
    pool: Executor,
    run: OpenRun,
    pair: Pair,
    on_point: Callable[[LoadPointRecord], None],
) -> None:
    """One point's rounds; its records written whatever stops them."""
    index, point = numbered
    a, b = endpoints
    rng = seeded_generator(point.seed, "interleave", point_label(point))
    done = Rounds([], [], [])
    try:
        for round_ in range(plan.repeat):
            again = replace(point, seed=point.seed + REPEAT_SEED_STRIDE * round_)
            order = (a, b) if rng.random() < 0.5 else (b, a)
            done.firsts.append(order[0].spec.name)
            for endpoint in order:
                label = f"{endpoint.spec.name} {index + 1}/{len(plan.points)} round {round_ + 1}/{plan.repeat}"
                tick = ticker(run.progress, f"{label} {point_label(point)}", again)
                record = measure_point(endpoint, again, workload, pool, tick)
                (done.a if endpoint is a else done.b).append(record)
                stop_if_unreachable(endpoint, record, "the interleaved run")
                if round_ == 0:
                    check_answered(endpoint, record, again)
    finally:
        _emit(point, done, plan.base.seed, run, pair, on_point)


def check_answered(endpoint: LoadEndpoint, record: LoadPointRecord, point: PointConfig) -> None:
    """Only a first window shows what one request of the plan's batch takes: a window its typical answer (the
    median; one stalled answer is no reason) does not fit is said (one line, exit 2) once that window is written."""
    service = record.latency_ms.service
    typical = None if service is None else (service.p50 if service.p50 is not None else service.mean)
    if typical is not None and point.duration_s is not None and typical > point.duration_s * 1000:
        raise UserError(
            f"load --interleave: --window {point.duration_s:g}s is shorter than one request of "
            f"{point_label(point)} to {endpoint.spec.name} (a typical answer took {typical:.0f} ms in the first "
            "window); the windows measured so far are written; give a longer --window"
        )


def _emit(
    point: PointConfig,
    done: Rounds,
    seed: int,
    run: OpenRun,
    pair: Pair,
    on_point: Callable[[LoadPointRecord], None],
) -> None:
    """Each endpoint's windows pooled into its record, then the paired record of the rounds both sides finished."""
    for windows in (done.a, done.b):
        if windows:
            record = pooled(windows, seed) if len(windows) > 1 else windows[0]
            run.write(record)
            on_point(record)
    complete = min(len(done.a), len(done.b))
    if complete >= 2:
        run.write(pair(point, done.a[:complete], done.b[:complete], done.firsts[:complete]))


def missing_pairs(results: Results) -> list[str]:
    """Why points an interleaved run measured have no paired record: the run stopped before both sides had 2
    rounds (a ratio's spread needs two). One line per such point; none for another kind of run."""
    settings = results.header.load or {}
    if not settings.get("interleave"):
        return []
    names = list(settings.get("endpoints", {}))
    windows: dict[str, dict[str, int]] = {}
    for record in results.load_points:
        windows.setdefault(point_label(record), {})[record.endpoint] = max(len(record.repeats), 1)
    paired = {record.point for record in results.interleaved}
    end = results.end
    if end is None:
        why = "the run stopped with no end record (killed)"
    elif end.status != EndStatus.COMPLETE:
        why = f"the run ended {end.status}" + (f": {end.error}" if end.error else "")
    else:
        why = "the run ended"
    return [
        f"No paired record for {label}: {min(sides.get(name, 0) for name in names)} round(s) measured on both "
        f"sides when {why}; a paired ratio needs 2 (its windows are in the points below)"
        for label, sides in windows.items()
        if label not in paired
    ]
