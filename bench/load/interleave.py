"""`load --interleave`: every point of the plan measured on two endpoints in alternating windows, round after
round, the order within each round drawn at random (seeded), so that drift on a shared machine falls on both
sides of every round alike.

    run_interleave(specs, plan, workload, output, pair)   # plan.repeat: the rounds; plan.base.duration_s: the window

The rounds a point runs: `--rounds N`, or (`--max-time`) as many as decide within the budget, the command's
`judge` looking at the rounds after each (bench/load/interleave_budget.py). Each window is a point as `load`
measures it (warm-up, measured window, drain: bench/load/measure.py). Once a
point's rounds are done, each endpoint's windows are pooled into its `load_point` record (one repeat per round,
in round order: bench/load/repeats.py) and `pair(point, rounds)` makes the point's paired record (the gate's
statistics live above this layer). Whatever stops the rounds (Ctrl-C, a dead server, a window
too short), what was measured is written.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import perf_counter

from bench.core.errors import MeasurementFailed, UserError
from bench.core.resample import seeded_generator
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.interleave_budget import FixedRounds, RoundsRule, SoFar
from bench.load.interleave_record import cut_pairs
from bench.load.interleave_slices import SideWindow, SlicedPoint
from bench.load.measure import measure_point, stop_if_unreachable
from bench.load.plan import SweepPlan
from bench.load.points import PointConfig, point_label
from bench.load.pool import load_pool, spawning_pool, stop_pool
from bench.load.repeats import REPEAT_SEED_STRIDE, pooled
from bench.load.sweep import load_header, ticker
from bench.load.workload import Workload
from bench.results.lifecycle import OpenRun, open_run
from bench.results.lifecycle import Output as RunOutput
from bench.results.schema import EndStatus, LoadPointRecord, RunCommand
from bench.results.store import Results


@dataclass
class Rounds:
    """One point's windows so far: each endpoint's, in round order, which endpoint went first in each, and (cut in
    slices) each window's slices' texts/s, None per round of whole windows."""

    a: list[LoadPointRecord] = field(default_factory=list)
    b: list[LoadPointRecord] = field(default_factory=list)
    firsts: list[str] = field(default_factory=list)
    a_slices: list[list[float | None] | None] = field(default_factory=list)
    b_slices: list[list[float | None] | None] = field(default_factory=list)
    stopped: str | None = None  # --max-time: why the rounds stopped (decided, the budget spent)

    def add(self, side: int, window: SideWindow) -> None:
        """A side's window (0: A, 1: B), with its slices' texts/s where it was cut in slices."""
        (self.a if side == 0 else self.b).append(window.record)
        (self.a_slices if side == 0 else self.b_slices).append(window.slice_texts_per_s)

    def complete(self) -> Rounds:
        """The rounds both sides finished."""
        n = min(len(self.a), len(self.b))
        return Rounds(self.a[:n], self.b[:n], self.firsts[:n], self.a_slices[:n], self.b_slices[:n], self.stopped)


Pair = Callable[[PointConfig, Rounds], object]
RoundRecord = Callable[[PointConfig, Rounds], object]  # the latest round both sides finished, as a record
Judge = Callable[[PointConfig, Rounds], SoFar]  # the rounds so far, looked at after each (--max-time)
RuleFor = Callable[[int], RoundsRule]  # the points still to run (this one included) -> this point's rule


def _undecided(point: PointConfig, done: Rounds) -> SoFar:
    return SoFar(False, f"{len(done.complete().a)} rounds")


def run_interleave(
    specs: list[EndpointSpec],
    plan: SweepPlan,
    workload: Workload,
    output: RunOutput,
    pair: Pair,
    on_point: Callable[[LoadPointRecord], None] = lambda record: None,
    pool_factory: Callable[[int], Executor] | None = None,
    slices: int = 1,
    rule_for: RuleFor | None = None,
    judge: Judge = _undecided,
    max_time_s: float | None = None,
    round_record: RoundRecord | None = None,
) -> Path:
    """Every point on `specs` (baseline, candidate) in `plan.repeat` rounds of one window each (`slices` > 1: each
    window cut into that many slices, alternated with the other side's: bench/load/interleave_slices.py); checked
    and preflighted before `output` is touched: a window (or slice) shorter than the idle server's answer to one
    request is one line, nothing written. `rule_for` (default: `plan.repeat` rounds) sets each point's rounds,
    `judge` says where its rounds stand after each; `round_record` makes each round's record, written as the round
    ends (a run killed mid-point keeps its rounds)."""
    base = plan.base
    with ExitStack() as cleanup:
        if pool_factory is None:  # the workers start (imports: seconds on a busy runner) while the preflight runs
            spawning = spawning_pool(base.workers)
            cleanup.callback(stop_pool, spawning.pool)  # also when the preflight fails
            pool_factory = lambda workers: spawning.ready()  # noqa: E731 - the factory load_pool asks for
        endpoints = open_endpoints(specs, base.op, base.timeout_s)
        cleanup.callback(close_endpoints, endpoints)
        check_window(endpoints, (base.duration_s or 0.0) / slices, "--window" if slices == 1 else "--slice")
        settings = {"op": base.op, "points": len(plan.points), "interleave": True, "rounds": plan.repeat}
        settings |= {"workers": base.workers, "warmup_s": base.warmup_s, "window_s": base.duration_s}
        settings |= {"timeout_s": base.timeout_s, "slices": slices}
        if max_time_s is not None:
            settings |= {"max_time_s": max_time_s}
        with (
            open_run(output, load_header(RunCommand.LOAD, workload, specs, base.seed, settings)) as run,
            load_pool(endpoints, base.op, base.workers, pool_factory) as pool,
        ):
            job = Job(endpoints, plan, workload, pool, run, pair, on_point, slices, judge, round_record)
            rules = rule_for or (lambda points_left: FixedRounds(plan.repeat))
            unpaired = [
                _unpaired(point, _point_rounds(job, index, point, rules(len(plan.points) - index)))
                for index, point in enumerate(plan.points)
            ]
            _raise_if_unjudged([line for line in unpaired if line], output.folder / "report.html")
    return output.results


def _unpaired(point: PointConfig, done: Rounds) -> str | None:
    """A point whose rounds ended (the budget spent) before both sides had the 2 a paired ratio needs: why."""
    n = len(done.complete().a)
    if n >= 2:
        return None
    why = done.stopped or "the rounds stopped"
    return (
        f"{point_label(point)}: {why}" if n == 0 else f"{point_label(point)}: {n} round, a paired ratio needs 2 ({why})"
    )


def _raise_if_unjudged(unpaired: list[str], report: Path) -> None:
    """A point with no paired record is not judged: no pass (exit 3, MeasurementFailed), its line in the `end`
    record's error and on the console (issue 50: no silent figure)."""
    if unpaired:
        raise MeasurementFailed(
            f"{len(unpaired)} point(s) not judged, no paired record: " + "; ".join(unpaired), report
        )


def check_window(endpoints: list[LoadEndpoint], window_s: float, flag: str = "--window") -> None:
    """A window (a slice) must hold at least one answer: the preflight's idle probe (one tiny request) is the
    least a request of the plan's batch takes."""
    for endpoint in endpoints:
        took = endpoint.idle_probe_s
        if took is not None and window_s < took:
            raise UserError(
                f"load --interleave: {flag} {window_s:g}s is shorter than one request to {endpoint.spec.name} "
                f"takes on the idle server ({took * 1000:.0f} ms for one short text); give a longer {flag}"
            )


@dataclass(frozen=True)
class Job:
    """What every point's rounds run with."""

    endpoints: list[LoadEndpoint]
    plan: SweepPlan
    workload: Workload
    pool: Executor
    run: OpenRun
    pair: Pair
    on_point: Callable[[LoadPointRecord], None]
    slices: int  # per window: 1, whole windows one after the other; more, slices alternated
    judge: Judge
    round_record: RoundRecord | None = None


def _point_rounds(job: Job, index: int, point: PointConfig, rule: RoundsRule) -> Rounds:
    """One point's rounds, as many as `rule` says; its records written whatever stops them."""
    a, b = job.endpoints
    rng = seeded_generator(point.seed, "interleave", point_label(point))
    sliced = SlicedPoint(job.endpoints, point, job.slices, job.workload) if job.slices > 1 else None
    done = Rounds()
    round_ = 0
    try:
        while rule.more(round_):
            began = perf_counter()
            again = replace(point, seed=point.seed + REPEAT_SEED_STRIDE * round_)
            order = (a, b) if rng.random() < 0.5 else (b, a)
            done.firsts.append(order[0].spec.name)
            label = f"{index + 1}/{len(job.plan.points)} {rule.label(round_)} {point_label(point)}"
            measured: list[tuple[LoadEndpoint, SideWindow]]
            if sliced is None:
                measured = [(e, _window(job, e, again, f"{e.spec.name} {label}")) for e in order]
            else:
                whole = replace(again, warmup_s=0.0, duration_s=2 * (again.duration_s or 0.0))  # both sides' windows
                tick = ticker(job.run.progress, f"{label} in 2 x {job.slices} slices", whole)
                windows = sliced.round(job.pool, again, 0 if order[0] is a else 1, tick)
                measured = list(zip((a, b), windows, strict=True))
            for endpoint, window in measured:
                done.add(0 if endpoint is a else 1, window)
                record = window.record
                stop_if_unreachable(endpoint, record, "the interleaved run")
                if round_ == 0 and sliced is None:
                    check_answered(endpoint, record, point)
                elif round_ == 0 and sliced is not None:
                    check_answered(endpoint, record, replace(point, duration_s=sliced.slice_s), "--slice")
            round_ += 1
            if job.round_record is not None:  # before the next round starts: a SIGKILL keeps the rounds so far
                job.run.write(job.round_record(point, done))
            rule.after(round_, perf_counter() - began, lambda: job.judge(point, done))
    finally:
        done.stopped = rule.stopped()
        _emit(point, done, job.plan.base.seed, job.run, job.pair, job.on_point)
    return done


def _window(job: Job, endpoint: LoadEndpoint, point: PointConfig, label: str) -> SideWindow:
    """One whole window on one endpoint (warm-up, measured window, drain): no slices."""
    return SideWindow(
        measure_point(endpoint, point, job.workload, job.pool, ticker(job.run.progress, label, point)), None
    )


def check_answered(endpoint: LoadEndpoint, record: LoadPointRecord, point: PointConfig, flag: str = "--window") -> None:
    """Only a first window shows what one request of the plan's batch takes: a window its typical answer (the
    median; one stalled answer is no reason) does not fit is said (one line, exit 2) once that window is written."""
    service = record.latency_ms.service
    typical = None if service is None else (service.p50 if service.p50 is not None else service.mean)
    if typical is not None and point.duration_s is not None and typical > point.duration_s * 1000:
        raise UserError(
            f"load --interleave: {flag} {point.duration_s:g}s is shorter than one request of "
            f"{point_label(point)} to {endpoint.spec.name} (a typical answer took {typical:.0f} ms in the first "
            f"window); the windows measured so far are written; give a longer {flag}"
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
    complete = done.complete()
    if len(complete.a) >= 2:
        run.write(pair(point, complete))


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
    lines = [
        f"No paired record for {label}: {min(sides.get(name, 0) for name in names)} round(s) measured on both "
        f"sides when {why}; a paired ratio needs 2 (its windows are in the points below)"
        for label, sides in windows.items()
        if label not in paired
    ]
    return lines + [  # a killed run writes no windows: the rounds it wrote as they ended
        f"No paired record for {cut.point}: {cut.stopped}; `ragbench compare RUN` judges the rounds it wrote"
        for cut in cut_pairs(results)
        if cut.point not in windows
    ]
