"""A size run's plan: its checked settings, and what follows from them before anything is measured.

The time the run will probably take, the memory its requests need, the length of a probe and the run's header.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.endpoints.spec import EndpointSpec
from bench.load.lengths import DocumentsDraw, LengthsFrom
from bench.load.points import PointConfig, sized_point
from bench.load.schedule import Arrival, ArrivalKind
from bench.load.shares import check_request_memory
from bench.load.sweep import load_header
from bench.load.workload import Workload
from bench.results.schema import CeilingPoint, Loop, Op, RunCommand, RunHeader
from bench.sizing.economics import Economics
from bench.sizing.search import measurements_left
from bench.sizing.slo import Slo, sig3
from bench.sizing.steady import WINDOW_RELAXATIONS, mg1_saturation, relaxation_s, stretch, warmup_for

START_FRACTION = 0.5  # the saturation search starts at half the closed loop's best request rate
MAX_PROBE_S = 120.0  # a measured window at most: a p99's 368 requests at 3 requests/s
MAX_WARMUP_S = 60.0  # a warm-up at most (3 relaxation times at 90% busy on a 100 ms server), and half a probe's share
LOWEST_RATE_FRACTION = 1 / 16  # the search halves at most 4 times below its start
GROWTH = 2.0  # the search doubles the rate until a probe fails
# From the M/D/1 rate of the closed loop's capacity (search_start) the search steps by a quarter: that start is
# within a factor of about two of a real server's answer (more slots or batching serve more at the same load).
MODEL_GROWTH = 1.25
MODEL_REQUESTS = 20_000  # Poisson arrivals simulated per rate of the M/D/1 start (0.4% bisection: ~0.3 s)
# A measurement costs its warm-up and measured window and then some: a failing probe's queue drains after its
# window (up to the window again at twice capacity), the next point's workers start.
OVERRUN = 1.5
CLOSED_POINTS_PER_BATCH = 3  # what a closed-loop sweep usually measures per batch (before it is measured)
# A probe lasts at least this many SLOs: a rate ρ times capacity builds (ρ−1)·T seconds of queue in a probe of T s,
# so only an overload past SLO/T shows; 5 SLOs show one past 20% (3 s probes passed 3.45/s on a 2.5/s server
# under a 2 s SLO).
PROBE_SLOS = 5.0
# A probe's warm-up and window within 5% of what a steady verdict needs count as whole (5% less of a window of
# 5 relaxation times leaves its verdict as it was); shorter, its pass does not stand (short_window).
WHOLE_NEED = 0.95


@dataclass
class SizePlan:
    """The `size` request, checked and parsed: everything the measuring session reads."""

    specs: list[EndpointSpec]
    op: Op
    slo: Slo
    economics: Economics
    lengths: list[int | LengthsFrom | None]
    sizes: list[int | DocumentsDraw]  # batches (embed) or documents per query (rerank: a number or a draw)
    burst_batches: list[int]
    burst_concurrency: list[int]
    duration_s: float
    warmup_s: float
    timeout_s: float
    arrival: Arrival
    max_concurrency: int
    max_probes: int
    probe_requests: int  # a probe lasts long enough for this many requests after its warm-up (probe_duration)
    tolerance: float
    burst: int  # texts in an Open WebUI ingestion burst
    workers: int
    seed: int
    nvml: bool | None = None  # None: sample this host's GPUs when an endpoint is on this host
    ceiling: Path | None = None  # `--ceiling` as given: the sizing record names it
    ceiling_points: list[CeilingPoint] = field(default_factory=list)
    ceiling_model: Path | None = None  # the ceiling's model: its tokenizer cuts the same texts by default
    max_time_s: float | None = None  # `--max-time`; None: no limit


def probe_duration(
    rate: float,
    duration_s: float,
    probe_requests: int,
    share_s: float = math.inf,
    slo_ms: float = 0.0,
    settle_s: float = 0.0,
) -> float:
    """A probe at `rate` lasts `duration_s`, or long enough for `probe_requests` and `settle_s` (probe_settle_s), at
    most MAX_PROBE_S, and at most its share of the time left (`share_s`), never under `duration_s` nor PROBE_SLOS ×
    the SLO (`slo_ms`): a slow endpoint's probes hold fewer requests, which its verdict says."""
    floor = max(duration_s, PROBE_SLOS * slo_ms / 1000.0)
    return max(floor, min(max(probe_requests / rate, settle_s), MAX_PROBE_S, share_s))


def _queued(plan: SizePlan, rate: float, capacity: float | None) -> bool:
    """Random arrivals under the closed loop's capacity: a queue that settles, in its relaxation time."""
    return capacity is not None and 0 < rate < capacity and plan.arrival.kind != ArrivalKind.CONSTANT


def probe_settle_s(plan: SizePlan, rate: float, capacity: float | None) -> float:
    """A Poisson probe's measured window at least: WINDOW_RELAXATIONS relaxation times of its queue (0 past the
    closed loop's capacity: that queue grows, which the growing-queue check sees in any window)."""
    if capacity is None or not _queued(plan, rate, capacity):
        return 0.0
    return WINDOW_RELAXATIONS * relaxation_s(1.0 / capacity, rate / capacity)


def probe_stretch(plan: SizePlan, rate: float, capacity: float | None) -> float:
    """Requests in a row whose latencies move together at `rate` (steady.stretch); 1 for constant arrivals (no
    queue under capacity) or without a measured capacity; past capacity every request is one stretch."""
    if capacity is None or plan.arrival.kind == ArrivalKind.CONSTANT:
        return 1.0
    return stretch(rate, 1.0 / capacity, rate / capacity)


def probe_warmup(plan: SizePlan, rate: float, capacity: float | None, share_s: float = math.inf) -> float:
    """A Poisson probe's warm-up at `rate`: long enough for its queue at utilisation rate ÷ `capacity` (the closed
    loop's best requests/s) to settle (steady.warmup_for), at most MAX_WARMUP_S and half its share of the time left;
    constant arrivals under capacity queue nothing, so `--warmup` as given."""
    if capacity is None or not _queued(plan, rate, capacity):
        return plan.warmup_s
    return warmup_for(1.0 / capacity, rate / capacity, plan.warmup_s, min(MAX_WARMUP_S, share_s / 2))


def short_window(plan: SizePlan, rate: float, capacity: float | None, warmup_s: float, window_s: float) -> str | None:
    """Why a pass on this warm-up and window does not stand: the budget cut them shorter than a steady verdict needs
    at `rate` (what the probe gets without a budget), so its queue may still have been building up (a p99 pass on 58
    requests in 38 s answered 1.47 requests/s where the truth is 1.38). None: the whole need."""
    warm = probe_warmup(plan, rate, capacity)
    settle = probe_settle_s(plan, rate, capacity)
    window = probe_duration(rate, plan.duration_s, plan.probe_requests, math.inf, plan.slo.ms, settle)
    if warmup_s >= warm * WHOLE_NEED and window_s >= window * WHOLE_NEED:
        return None
    return (
        f"its {sig3(window_s)} s window after a {sig3(warmup_s)} s warm-up is shorter than the {sig3(window)} s after "
        f"{sig3(warm)} s a steady {plan.slo.name} verdict needs at this rate (the budget held no more): a pass on it "
        "does not stand"
    )


def search_start(plan: SizePlan, capacity: float) -> float | None:
    """The rate at which one FIFO server of `capacity` requests/s, each taking 1/capacity s (M/D/1), keeps the SLO's
    percentile in steady state: where a Poisson search starts (None: the SLO is under one service time)."""
    service = np.array([1.0 / capacity])
    if plan.slo.ms / 1000.0 <= service[0]:
        return None
    rate = mg1_saturation(service, plan.slo.ms / 1000.0, plan.slo.percentile, MODEL_REQUESTS, tolerance=0.004)
    return rate if rate > 0 else None


def steady_needs_text(plan: SizePlan, rate: float, capacity: float, left_s: float) -> str | None:
    """Said before the search when the budget cannot hold what a steady verdict needs at this service time: the
    requests the SLO's percentile needs after a warm-up of WARMUP_RELAXATIONS relaxation times, per probe."""
    warm = probe_warmup(plan, rate, capacity)
    probe_s = warm + max(plan.probe_requests / rate, probe_settle_s(plan, rate, capacity))
    needed = probe_s * measurements_left(None, None, plan.tolerance, MODEL_GROWTH, plan.max_probes) * OVERRUN
    if needed <= left_s:
        return None
    relax = relaxation_s(1.0 / capacity, rate / capacity)
    return (
        f"size: a steady {plan.slo.name} verdict at {sig3(rate)} requests/s ({rate / capacity:.0%} of the "
        f"capacity the closed loop measured, {sig3(capacity)} requests/s) needs {plan.probe_requests} requests and "
        f"{WINDOW_RELAXATIONS:g} relaxation times of its queue (about {sig3(relax)} s each) after a {sig3(warm)} s "
        f"warm-up: {sig3(probe_s)} s a probe, about {sig3(needed)} s for the "
        f"search, and {sig3(max(left_s, 0.0))} s are left (--max-time {sig3(plan.max_time_s or 0)} s): each probe "
        "gets what it needs while the budget holds it, then what is left (a pass on less does not stand), "
        "and the answer is the interval between the highest steady pass and the lowest rate that did not pass"
    )


def expected_text(plan: SizePlan) -> str:
    """What one endpoint and length will probably take, said before anything is measured."""
    point_s = plan.warmup_s + plan.duration_s
    closed_s = len(plan.sizes) * CLOSED_POINTS_PER_BATCH * point_s
    bursts = len(plan.burst_batches) * len(plan.burst_concurrency) if plan.op == Op.EMBED else 0
    probes = measurements_left(None, None, plan.tolerance, GROWTH, plan.max_probes)
    low = (closed_s + bursts * plan.warmup_s + probes * point_s) * OVERRUN
    high = (closed_s + bursts * point_s + probes * (plan.warmup_s + MAX_PROBE_S)) * OVERRUN
    runs = len(plan.specs) * len(plan.lengths)
    cap = (
        f"; --max-time {sig3(plan.max_time_s)} s bounds it (then the answer is the best so far, a lower bound)"
        if plan.max_time_s is not None
        else "; no --max-time: it runs until the search is done"
    )
    return (
        f"size: probably {sig3(low * runs)}–{sig3(high * runs)} s: per endpoint and length a closed sweep of about "
        f"{len(plan.sizes) * CLOSED_POINTS_PER_BATCH} points, {bursts} burst points and about {probes} probe "
        f"measurements of {sig3(point_s)}–{sig3(plan.warmup_s + MAX_PROBE_S)} s (a slow endpoint's are the long "
        f"ones){cap}"
    )


def check_memory(plan: SizePlan, workload: Workload) -> None:
    """Every closed-loop and burst request the run will send fits in memory (check_request_memory)."""
    bursts = plan.burst_batches if plan.op == Op.EMBED else []
    check_request_memory(
        [
            sized_point(PointConfig(op=plan.op, length=n, workers=plan.workers), size)
            for n in plan.lengths
            for size in plan.sizes
        ]
        + [
            PointConfig(op=plan.op, loop=Loop.BURST, batch=b, burst=plan.burst, length=n)
            for n in plan.lengths
            for b in bursts
        ],
        workload,
    )


def size_header(plan: SizePlan, workload: Workload) -> RunHeader:
    settings = {
        "op": plan.op,
        "workers": plan.workers,
        "warmup_s": plan.warmup_s,
        "duration_s": plan.duration_s,
        "timeout_s": plan.timeout_s,
        "slo_ms": plan.slo.ms,
        "slo_percentile": plan.slo.percentile,
        "max_error_rate": plan.slo.max_error_rate,
        "max_time_s": plan.max_time_s,
        "arrival": str(plan.arrival),
    }
    return load_header(RunCommand.SIZE, workload, plan.specs, plan.seed, settings)
