"""The plain function behind `ragbench size`: closed sweep, saturation search, bursts, recommendation.

Every measured point goes through the load sweep's own `measure_point` (same workers, histograms
and records as `ragbench load`) and is written to results.jsonl the moment it finishes, followed by
its GPU telemetry window; the `sizing` record with the recommendation comes last for each endpoint
and length. A Ctrl-C or a dead server keeps every finished point and ends with the `end` record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from bench.commands.load import pool_factory, raise_if_failed
from bench.core import values as v
from bench.core.errors import UserError
from bench.endpoints.spec import EndpointSpec, parse_spec
from bench.load.points import PointConfig, point_label
from bench.load.runner import (
    LoadEndpoint,
    check_request_memory,
    close_endpoints,
    load_header,
    load_pool,
    measure_point,
    open_endpoints,
    stop_if_unreachable,
)
from bench.load.schedule import parse_arrival
from bench.load.workload import Workload, load_workload
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.outdir import RESULTS_FILE
from bench.results.schema import (
    CeilingPoint,
    GpuTelemetryRecord,
    LoadPointRecord,
    Loop,
    Op,
    RunHeader,
    SaturationProbe,
    SaturationSummary,
    SizingRecord,
)
from bench.results.store import Results, read_results
from bench.sizing.size import (
    Economics,
    Saturation,
    Slo,
    choose_closed,
    closed_sweep,
    recommend,
    saturation_search,
    texts_per_s,
)
from bench.sizing.telemetry import GpuSampler

LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
START_FRACTION = 0.5  # the saturation search starts at half the closed loop's best request rate
MAX_PROBE_S = 60.0
LOWEST_RATE_FRACTION = 1 / 16  # the search halves at most 4 times below its start


def probe_duration(rate: float, duration_s: float, probe_requests: int) -> float:
    """A probe at `rate` lasts `duration_s`, or long enough for `probe_requests`, at most MAX_PROBE_S."""
    return min(max(duration_s, probe_requests / rate), MAX_PROBE_S)


@dataclass
class SizeRequest:
    endpoints: list[str]
    slo_p99_ms: float
    out: Path
    op: str = ""
    lengths: str | None = "128"
    batches: str = "1,8,32"
    documents: str = "10,50"
    max_concurrency: int = 32
    max_error_rate: float = 0.001
    target_rps: float | None = None
    gpu_hourly_usd: float | None = None
    ceiling: Path | None = None
    arrival: str = "poisson"
    duration: str = "3s"
    warmup: str = "1s"
    burst: int = 64
    burst_batches: str = "1,8,32"
    burst_concurrency: str = "1,4,0"
    max_probes: int = 8
    # A probe lasts long enough for this many requests: the p99 of fewer than 100 requests is their slowest one,
    # which one stall of a busy machine decides (30-request probes passed or failed at random below saturation).
    probe_requests: int = 100
    tolerance: float = 0.05
    workers: int = 1
    texts: Path | None = None
    dataset: Path | None = None
    tokenizer: Path | None = None
    nvml: bool | None = None  # None: sample this host's GPUs when the endpoint is on this host
    overwrite: bool = False  # replace an earlier run in `out` (only ragbench's files there)
    timeout: str = "30s"
    seed: int = 0
    ray: str | None = None  # run the workers as Ray actors on this cluster ("auto" or host:port)


@dataclass
class SizePlan:
    """The request, checked and parsed."""

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
    arrival: object
    ceiling_points: list = field(default_factory=list)
    ceiling_model: Path | None = None  # the ceiling's model: its tokenizer cuts the same texts by default


def check(request: SizeRequest) -> SizePlan:
    """Every flag checked before anything is measured or written: one line, exit 2."""
    specs = [parse_spec(s) for s in request.endpoints]
    if len({s.name for s in specs}) != len(specs):
        raise UserError("size: endpoint names must differ")
    if len({s.is_rerank for s in specs}) > 1:
        raise UserError("size: mix of embedding and rerank endpoints; size one --op at a time")
    op = request.op or ("rerank" if specs[0].is_rerank else "embed")
    if op not in ("embed", "rerank"):
        raise UserError(f"--op {request.op!r}: expected embed or rerank")
    slo_p99_ms = v.number("--slo-p99", request.slo_p99_ms, v.LATENCY_MS)
    v.number("--max-error-rate", request.max_error_rate, v.ERROR_RATE)
    for flag, value, quantity in (
        ("--target-rps", request.target_rps, v.TARGET_RPS),
        ("--gpu-hourly-usd", request.gpu_hourly_usd, v.HOURLY_USD),
    ):
        if value is not None:
            v.number(flag, value, quantity)
    v.number("--max-concurrency", request.max_concurrency, v.USERS)
    v.number("--max-probes", request.max_probes, v.PROBES)
    v.number("--probe-requests", request.probe_requests, v.PROBE_REQUESTS)
    v.number("--workers", request.workers, v.WORKERS)
    v.number("--burst", request.burst, v.BURST_TEXTS)
    v.number("--seed", request.seed, v.SEED)
    if not 0 < request.tolerance < 1:
        raise UserError(f"--tolerance {request.tolerance}: expected a fraction in (0, 1)")
    if any(s.url is None for s in specs) and request.workers > 1:
        raise UserError("size: in-process endpoints (reference, reference-rerank) run in one worker; use --workers 1")
    ceiling_points, ceiling_model = _ceiling(request)
    return SizePlan(
        specs=specs,
        op=Op(op),
        slo=Slo(slo_p99_ms, request.max_error_rate),
        economics=Economics(request.target_rps, request.gpu_hourly_usd),
        lengths=[*v.number_list("--lengths", request.lengths, v.TOKENS_PER_TEXT)] or [None],
        sizes=(
            v.number_list("--documents", request.documents, v.TEXTS_PER_REQUEST)
            if op == Op.RERANK
            else v.number_list("--batch", request.batches, v.TEXTS_PER_REQUEST)
        ),
        burst_batches=v.number_list("--burst-batch", request.burst_batches, v.TEXTS_PER_REQUEST),
        burst_concurrency=v.number_list("--burst-concurrency", request.burst_concurrency, v.USERS_OR_UNCAPPED),
        duration_s=v.duration("--duration", request.duration, v.SECONDS),
        warmup_s=v.duration("--warmup", request.warmup, v.WARMUP_SECONDS),
        timeout_s=v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS),
        arrival=parse_arrival(request.arrival),
        ceiling_points=ceiling_points,
        ceiling_model=ceiling_model,
    )


def _ceiling(request: SizeRequest) -> tuple[list[CeilingPoint], Path | None]:
    """`--ceiling`: its points, and its model (whose tokenizer cuts the same texts unless --tokenizer says)."""
    if request.ceiling is None:
        return [], None
    path = request.ceiling / RESULTS_FILE if request.ceiling.is_dir() else request.ceiling
    ceiling_points = read_results(path).ceiling
    if not ceiling_points:
        raise UserError(f"--ceiling {path}: no ceiling_point records (write one with `ragbench ceiling`)")
    ceiling_model = Path(ceiling_points[0].model)
    if request.tokenizer is None and not (ceiling_model / "tokenizer.json").is_file():
        raise UserError(
            f"--ceiling {path}: its model {ceiling_model} is not here to cut the same texts; "
            "give --tokenizer with that model's folder"
        )
    return ceiling_points, ceiling_model


def on_this_host(spec: EndpointSpec) -> bool:
    return spec.url is None or (urlsplit(spec.url).hostname or "") in LOOPBACK


class _Session:
    """One endpoint's measurements: each point measured, written, and its GPU window written after it."""

    def __init__(
        self,
        endpoint: LoadEndpoint,
        plan: SizePlan,
        request: SizeRequest,
        workload: Workload,
        pool,
        writer: OpenRun,
        sampler: GpuSampler | None,
        report: Callable[[LoadPointRecord], None],
    ):
        self.endpoint, self.plan, self.request = endpoint, plan, request
        self.workload, self.pool, self.writer, self.sampler, self.report = workload, pool, writer, sampler, report
        self.points: list[LoadPointRecord] = []

    def measure(self, point: PointConfig) -> LoadPointRecord:
        record = measure_point(self.endpoint, point, self.workload, self.pool)
        finished = time.monotonic()
        self.writer.write(record)
        self.report(record)
        self.points.append(record)
        if self.sampler is not None and self.sampler.available:
            # The measured window ends with the last answer, just before measure_point returned.
            windows = self.sampler.window(finished - record.duration_s, finished)
            self.writer.write(
                GpuTelemetryRecord(
                    endpoint=record.endpoint,
                    point=point_label(record),
                    start=finished - record.duration_s,
                    end=finished,
                    gpus=[w.to_dict() for w in windows],
                )
            )
        stop_if_unreachable(self.endpoint, record, "sizing")
        return record

    def point(self, loop: Loop, size: int, length: int | None, **kwargs) -> PointConfig:
        plan = self.plan
        return PointConfig(
            op=plan.op,
            loop=loop,
            batch=size,
            length=length,
            duration_s=plan.duration_s,
            warmup_s=plan.warmup_s,
            workers=self.request.workers,
            timeout_s=plan.timeout_s,
            max_error_rate=plan.slo.max_error_rate,
            **kwargs,
        )

    def saturation(self, best: LoadPointRecord | None, length: int | None) -> Saturation:
        """The saturation search at the closed loop's best batch, from half its request rate."""
        plan, request = self.plan, self.request
        if best is None:
            return Saturation(rate=None, point=None, first_failure=None)
        seeds = iter(range(request.seed, request.seed + 10_000))
        start_rate = max(best.throughput.requests_per_s * START_FRACTION, 0.01)
        return saturation_search(
            lambda rate: self.measure(
                replace(
                    self.point(Loop.OPEN, best.batch, length, rate=rate, arrival=plan.arrival, seed=next(seeds)),
                    duration_s=probe_duration(rate, plan.duration_s, request.probe_requests),
                )
            ),
            start_rate=start_rate,
            slo=plan.slo,
            tolerance=request.tolerance,
            max_probes=request.max_probes,
            min_rate=start_rate * LOWEST_RATE_FRACTION,
        )

    def size(self, length: int | None, telemetry: str) -> SizingRecord:
        plan, request = self.plan, self.request
        start = len(self.points)
        closed = closed_sweep(
            lambda b, c: self.measure(self.point(Loop.CLOSED, b, length, concurrency=c)),
            plan.sizes,
            request.max_concurrency,
            plan.slo,
        )
        saturation = self.saturation(choose_closed(closed, plan.slo).best, length)
        if plan.op == Op.EMBED:  # Open WebUI's ingestion pattern: a file's chunks fired together
            for batch in plan.burst_batches:
                for concurrency in plan.burst_concurrency:
                    self.measure(self.point(Loop.BURST, batch, length, concurrency=concurrency, burst=request.burst))
        mine = self.points[start:]
        lines = recommend(mine, saturation, plan.slo, plan.economics, plan.ceiling_points if request.ceiling else None)
        return SizingRecord(
            endpoint=self.endpoint.spec.name,
            op=plan.op,
            length=length,
            slo_p99_ms=plan.slo.p99_ms,
            max_error_rate=plan.slo.max_error_rate,
            saturation=_summary(saturation),
            lines=lines,
            telemetry=telemetry,
            ceiling=str(request.ceiling) if request.ceiling else None,
        )


def _summary(saturation: Saturation) -> SaturationSummary:
    """Where the search ended, its points by label (as the results file names them)."""
    sat = saturation.point
    return SaturationSummary(
        rate=saturation.rate,
        texts_per_s=texts_per_s(sat) if sat else None,
        point=point_label(sat) if sat else None,
        first_failure=saturation.first_failure,
        probes=[  # remeasured: failed and measured again, the majority of up to three measurements deciding
            SaturationProbe(
                p.rate,
                p.passed,
                point_label(p.point),
                remeasured=p.measured > 1,
                measurements=p.measured if p.measured > 1 else None,
            )
            for p in saturation.probes
        ],
    )


def run_size(request: SizeRequest, report: Callable[[LoadPointRecord], None] = lambda r: None) -> Path:
    """Size every endpoint at every length; returns the results path. Everything is checked before `out` is
    touched; the sizing lines and the report follow whatever finished (bench.results.lifecycle)."""
    from bench.report import write_report

    output = Output(request.out, request.overwrite, report=write_report, show=show_sizing, say=print)
    plan = check(request)
    pools = pool_factory(request.ray, plan.specs, "size")
    workload = load_workload(request.texts, request.dataset, request.tokenizer or plan.ceiling_model)
    _check_memory(plan, request, workload)
    endpoints = open_endpoints(plan.specs, plan.op, plan.timeout_s)  # a wrong URL, key or model: nothing written
    sessions: list[_Session] = []
    try:
        with (
            open_run(output, _header(plan, request, workload)) as run,
            _sampler(request, plan) as (sampler, telemetry),
            load_pool(endpoints, plan.op, request.workers, pools) as pool,
        ):
            for endpoint in endpoints:
                session = _Session(endpoint, plan, request, workload, pool, run, sampler, report)
                sessions.append(session)
                for length in plan.lengths:
                    run.write(session.size(length, telemetry))
    finally:
        close_endpoints(endpoints)
    # After the `end` record (the run is complete): a point with no success sized nothing, exit 3. Points past
    # the error limit are the search's own business (a failed probe), not a failed measurement.
    raise_if_failed([p for session in sessions for p in session.points])
    return output.results


def show_sizing(results: Results) -> None:
    """Each sizing record's lines, as the terminal shows them."""
    for record in results.sizing:
        print(f"\n{record.endpoint} ({record.op}, length {record.length}), p99 SLO {record.slo_p99_ms:g} ms:")
        for line in record.lines:
            print(f"  {line.setting}: {line.value} — {line.why}")


def _check_memory(plan: SizePlan, request: SizeRequest, workload: Workload) -> None:
    bursts = plan.burst_batches if plan.op == Op.EMBED else []
    check_request_memory(
        [PointConfig(op=plan.op, batch=b, length=n, workers=request.workers) for n in plan.lengths for b in plan.sizes]
        + [
            PointConfig(op=plan.op, loop=Loop.BURST, batch=b, burst=request.burst, length=n)
            for n in plan.lengths
            for b in bursts
        ],
        workload,
    )


def _header(plan: SizePlan, request: SizeRequest, workload: Workload) -> RunHeader:
    settings = {
        "op": plan.op,
        "workers": request.workers,
        "warmup_s": plan.warmup_s,
        "duration_s": plan.duration_s,
        "timeout_s": plan.timeout_s,
        "slo_p99_ms": plan.slo.p99_ms,
        "max_error_rate": plan.slo.max_error_rate,
        "arrival": str(plan.arrival),
    }
    return load_header("size", workload, plan.specs, request.seed, settings)


@contextmanager
def _sampler(request: SizeRequest, plan: SizePlan) -> Iterator[tuple[GpuSampler | None, str]]:
    """This host's GPUs sampled while the endpoints are sized (when asked, or when an endpoint is on this host),
    and the sentence that says where the telemetry comes from."""
    on_host = any(on_this_host(s) for s in plan.specs)
    sampler = GpuSampler().start() if (request.nvml if request.nvml is not None else on_host) else None
    if sampler is None:
        telemetry = (
            "no GPU telemetry: --no-nvml"
            if request.nvml is False
            else "no GPU telemetry: the server is not on this host (--nvml samples this host's GPUs anyway)"
        )
    else:
        telemetry = sampler.reason or (
            f"NVML: {len(sampler.names)} GPU(s) ({', '.join(sorted(set(sampler.names)))}) "
            f"at {1 / sampler.interval:g} Hz, mean and max over each point's measured window"
        )
    try:
        yield sampler, telemetry
    finally:
        if sampler is not None:
            sampler.stop()
