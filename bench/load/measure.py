"""One sweep point measured: warm-up, the shares run with /metrics read around the window, merged, then the drain.

record = measure_point(endpoint, point, workload, executor)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from time import perf_counter

from bench.core.errors import MeasurementFailed
from bench.core.machine import MachineWatch
from bench.endpoints.tei_metrics import MetricsSnapshot
from bench.load.endpoint import LoadEndpoint
from bench.load.merge import merge_shares
from bench.load.points import PointConfig, point_label
from bench.load.pool import run_plans
from bench.load.recorder import Outcome
from bench.load.share import ShareResult
from bench.load.shares import plans_starting
from bench.load.workload import Workload
from bench.results.schema import LoadPointRecord, Loop

DRAIN_MIN_S = 5.0  # the drain's bound: the point's --timeout, at least this (a short timeout leaves a long backlog)


def measure_point(
    endpoint: LoadEndpoint,
    point: PointConfig,
    workload: Workload,
    executor: Executor,
    tick: Callable[[], None] = lambda: None,
    on_shares: Callable[[list[ShareResult]], None] = lambda shares: None,
) -> LoadPointRecord:
    """Warm up (burst: a closed-loop warm-up apart), run the shares with /metrics read at the end of the
    warm-up and after the last answer, merge, and wait until the server is idle again (`LoadEndpoint.drain`):
    the next point, or the next command, starts on an idle server. `on_shares` sees the raw shares (the
    per-request rows of --requests-csv)."""
    _warm_up_burst(endpoint, point, workload, executor, tick)
    metrics = endpoint.metrics
    before: list[MetricsSnapshot | None] = []
    reader = None
    measured_from_start = point.loop == Loop.BURST or point.warmup_s <= 0
    if metrics is not None and measured_from_start:
        # Nothing runs before the measured window: read /metrics before the start is even set, so the
        # first answers (a 422 comes back in a millisecond) cannot land before the snapshot.
        before.append(metrics.snapshot())
    start_at, plans = plans_starting(endpoint, point, workload)
    stopped = threading.Event()  # set when the point ends early (Ctrl-C, a failure): the reader reads nothing then
    if metrics is not None and not measured_from_start:  # read /metrics when the warm-up ends
        window = start_at + point.warmup_s

        def read_when_warm() -> None:
            if not stopped.wait(max(0.0, window - perf_counter())):
                before.append(metrics.snapshot())

        reader = threading.Thread(target=read_when_warm, daemon=True)
        reader.start()
    watch = MachineWatch.start()
    try:
        shares = run_plans(executor, plans, tick)
    finally:
        stopped.set()
    machine = watch.stop()
    if reader is not None:
        reader.join()
    first = before[0] if before else None
    after = metrics.snapshot() if first and metrics is not None else None
    on_shares(shares)
    record = merge_shares(endpoint.spec.name, point, shares, workload, first, after)
    record.machine = machine
    record.drain = endpoint.drain(max(point.timeout_s, DRAIN_MIN_S))
    return record


def _warm_up_burst(
    endpoint: LoadEndpoint, point: PointConfig, workload: Workload, executor: Executor, tick: Callable[[], None]
) -> None:
    """A burst's warm-up is a closed loop of its own, before the burst's measured sends are even planned."""
    if point.loop == Loop.BURST and point.warmup_s > 0:
        warm = replace(
            point, loop=Loop.CLOSED, concurrency=max(1, point.concurrency or 1), duration_s=0.0, requests=None
        )
        run_plans(executor, plans_starting(endpoint, warm, workload)[1], tick)


def unreachable(record: LoadPointRecord) -> bool:
    """Nothing answered at all: the server is gone (or never was); later points would measure nothing."""
    errors = record.requests.errors
    return record.requests.ok == 0 and bool(errors) and set(errors) <= {Outcome.CONNECTION, Outcome.TIMEOUT}


def stop_if_unreachable(endpoint: LoadEndpoint, record: LoadPointRecord, what: str) -> None:
    """A server that answered the preflight and then nothing at all died during the run: the command ran and
    a measurement failed (MeasurementFailed, exit 3, once the finished points and the report are written),
    not a user error."""
    if unreachable(record):
        example = next(iter(record.error_examples.values()), "")
        raise MeasurementFailed(
            f"endpoint {endpoint.spec.name}: no answer at all during {point_label(record)} "
            f"({example}); {what} stops here, finished points are saved"
        )
