"""A size run's plan: its checked settings, and what follows from them before anything is measured.

The time the run will probably take, the memory its requests need, the length of a probe and the run's header.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from bench.endpoints.spec import EndpointSpec
from bench.load.points import PointConfig
from bench.load.schedule import Arrival
from bench.load.shares import check_request_memory
from bench.load.sweep import load_header
from bench.load.workload import Workload
from bench.results.schema import CeilingPoint, Loop, Op, RunHeader
from bench.sizing.economics import Economics
from bench.sizing.search import measurements_left
from bench.sizing.slo import Slo, sig3

START_FRACTION = 0.5  # the saturation search starts at half the closed loop's best request rate
MAX_PROBE_S = 60.0
LOWEST_RATE_FRACTION = 1 / 16  # the search halves at most 4 times below its start
GROWTH = 2.0  # the search doubles the rate until a probe fails
# A measurement costs its warm-up and measured window and then some: a failing probe's queue drains after its
# window (up to the window again at twice capacity), the next point's workers start.
OVERRUN = 1.5
CLOSED_POINTS_PER_BATCH = 3  # what a closed-loop sweep usually measures per batch (before it is measured)
# A probe lasts at least this many SLOs: a rate ρ times capacity builds (ρ−1)·T seconds of queue in a probe of T s,
# so only an overload past SLO/T shows; 5 SLOs show one past 20% (3 s probes passed 3.45/s on a 2.5/s server
# under a 2 s SLO).
PROBE_SLOS = 5.0


@dataclass
class SizePlan:
    """The `size` request, checked and parsed: everything the measuring session reads."""

    specs: list[EndpointSpec]
    op: Op
    slo: Slo
    economics: Economics
    lengths: list[int | None]
    sizes: list[int]  # batches (embed) or documents per query (rerank)
    burst_batches: list[int]
    burst_concurrency: list[int]
    duration_s: float
    warmup_s: float
    timeout_s: float
    arrival: Arrival
    max_concurrency: int
    max_probes: int
    probe_requests: int  # a probe lasts long enough for this many requests (probe_duration)
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
    rate: float, duration_s: float, probe_requests: int, share_s: float = math.inf, slo_ms: float = 0.0
) -> float:
    """A probe at `rate` lasts `duration_s`, or long enough for `probe_requests`, at most MAX_PROBE_S, and at most
    its share of the time left (`share_s`), never under `duration_s` nor PROBE_SLOS × the SLO (`slo_ms`): a slow
    endpoint's probes hold fewer requests, which its verdict says."""
    floor = max(duration_s, PROBE_SLOS * slo_ms / 1000.0)
    return max(floor, min(probe_requests / rate, MAX_PROBE_S, share_s))


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
        else "; --max-time bounds it"
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
        [PointConfig(op=plan.op, batch=b, length=n, workers=plan.workers) for n in plan.lengths for b in plan.sizes]
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
    return load_header("size", workload, plan.specs, plan.seed, settings)
