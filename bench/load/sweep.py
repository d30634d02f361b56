"""The load sweep: every point for every endpoint, each measured after its own warm-up, one `load_point` record per
point written as soon as it is measured.

The reusable pieces, for other executors (Ray actors run the same shares):

    endpoint = LoadEndpoint(parse_endpoint_spec("tei=tei@http://127.0.0.1:8080"))    # bench/load/endpoint.py
    start_at, plans = plans_starting(endpoint, point, workload)              # bench/load/shares.py
    shares = [run_share(plan) for plan in plans]                             # bench/load/worker.py, anywhere
    record = merge_shares(endpoint.spec.name, point, shares, workload)       # bench/load/merge.py

`measure_point(endpoint, point, workload, executor)` (bench/load/measure.py) does all of that on a pool.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from time import perf_counter

import bench
from bench.core.errors import UserError
from bench.core.progress import ProgressFactory
from bench.core.secrets import mask_data
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.measure import measure_point, stop_if_unreachable
from bench.load.plan import SweepPlan
from bench.load.points import PointConfig, point_label
from bench.load.pool import load_pool
from bench.load.repeats import run_interleaved
from bench.load.requests_csv import RequestsCsv
from bench.load.share import ShareResult
from bench.load.workload import Workload
from bench.results.frame import now_iso
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.schema import LoadPointRecord, Loop, RunCommand, RunHeader


def load_header(
    command: RunCommand, workload: Workload, specs: list[EndpointSpec], seed: int, settings: dict[str, object]
) -> RunHeader:
    """The `run` header of load and size: the workload, the endpoints (secrets masked) and the sweep's settings."""
    return RunHeader(
        command=command,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset={
            "name": "load workload",
            "source": workload.source,
            "texts": len(workload.texts),
            "tokens_source": workload.tokens_source,
        },
        measures=[],
        measure_labels={},
        depth=0,
        seed=seed,
        targets=[s.name for s in specs],
        load=mask_data(
            {"endpoints": {s.name: {"kind": s.kind, "url": s.url, "options": s.params} for s in specs}, **settings}
        ),
    )


def run_load(
    specs: list[EndpointSpec],
    plan: SweepPlan,
    workload: Workload,
    output: Output,
    on_point: Callable[[LoadPointRecord], None] = lambda record: None,
    pool_factory: Callable[[int], Executor] | None = None,
) -> Path:
    """Every point for every endpoint; the results file keeps each finished point whatever happens next.
    Everything is checked before `output` is touched (bench.results.lifecycle). `pool_factory(workers)` makes
    the executor the shares run on (default: local worker processes; bench.load.ray_workers.RayExecutor: Ray actors).
    `plan.requests_csv`: one row per measured request written there, point by point (RequestsCsv)."""
    base = plan.base
    if any(s.url is None for s in specs) and base.workers > 1:
        raise UserError("load: in-process endpoints (reference, reference-rerank) run in one worker; use --workers 1")
    endpoints = open_endpoints(specs, base.op, base.timeout_s)
    settings = {
        "op": base.op,
        "points": len(plan.points),
        "repeat": plan.repeat,
        "workers": base.workers,
        "warmup_s": base.warmup_s,
        "duration_s": base.duration_s,
        "requests": base.requests,
        "timeout_s": base.timeout_s,
    }
    try:
        with (
            open_run(output, load_header(RunCommand.LOAD, workload, specs, base.seed, settings)) as run,
            load_pool(endpoints, base.op, base.workers, pool_factory) as pool,
            RequestsCsv(plan.requests_csv) as rows,
        ):
            for endpoint in endpoints:
                _sweep_endpoint(endpoint, plan, workload, pool, run, on_point, rows)
    finally:
        close_endpoints(endpoints)
    return output.results


def _sweep_endpoint(
    endpoint: LoadEndpoint,
    plan: SweepPlan,
    workload: Workload,
    pool: Executor,
    run: OpenRun,
    on_point: Callable[[LoadPointRecord], None],
    rows: RequestsCsv,
) -> None:
    """Every point of the plan on one endpoint, each `plan.repeat` times interleaved (bench/load/repeats.py);
    each point's record is written once its repeats are measured, and a dead server stops the sweep."""
    points = list(plan.points)

    def measure(round_: int, index: int, point: PointConfig) -> LoadPointRecord:
        repeat = f" repeat {round_ + 1}/{plan.repeat}" if plan.repeat > 1 else ""
        label = f"{endpoint.spec.name} {index + 1}/{len(points)}{repeat} {point_label(point)}"

        def write_rows(shares: list[ShareResult]) -> None:
            rows.write(endpoint.spec.name, point_label(point), round_ + 1, shares)

        return measure_point(endpoint, point, workload, pool, ticker(run.progress, label, point), write_rows)

    def emit(record: LoadPointRecord) -> None:
        run.write(record)
        on_point(record)

    def check(record: LoadPointRecord) -> None:
        stop_if_unreachable(endpoint, record, "the sweep")

    run_interleaved(points, plan.repeat, measure, emit, plan.base.seed, check)


def ticker(progress: ProgressFactory, description: str, point: PointConfig) -> Callable[[], None]:
    """A progress bar per point, advanced by the clock (workers run in other processes)."""
    planned = None if point.duration_s is None or point.loop == Loop.BURST else point.warmup_s + point.duration_s
    advance = progress(description, int(planned * 10) if planned else None)
    started = perf_counter()
    shown = [0]

    def tick() -> None:
        now = int((perf_counter() - started) * 10)
        if planned is not None:
            now = min(now, int(planned * 10))
        if now > shown[0]:
            advance(now - shown[0])
            shown[0] = now

    return tick
