"""The plain function behind `ragbench load`: check every flag first (one line, exit 2), then run the sweep."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, fields
from pathlib import Path

from bench.commands.load_console import raise_if_failed, show_points
from bench.commands.load_request import LoadRequest
from bench.commands.specs import endpoint_specs
from bench.core import values as v
from bench.core.errors import UserError
from bench.endpoints.spec import EndpointSpec
from bench.gate.checks import CountAs
from bench.gate.config import GateConfig, build_gate_config
from bench.gate.options import GateOptions
from bench.load.interleave_slices import slices_per_window
from bench.load.lengths import parse_documents, parse_lengths
from bench.load.plan import SweepPlan, plan_sweep
from bench.load.points import (
    PointConfig,
    SweepConfig,
)
from bench.load.requests_csv import RequestsCsv
from bench.load.schedule import parse_arrival
from bench.load.shares import check_request_memory
from bench.load.sweep import run_load
from bench.load.workload import load_workload
from bench.results.lifecycle import Output
from bench.results.outdir import check_out_file
from bench.results.schema import LoadPointRecord, Op


def sweep_of(request: LoadRequest, is_rerank: bool) -> SweepPlan:
    """The sweep's typed plan, its points built once: every flag checked, nothing read or opened."""
    op = _op(request.op, is_rerank)
    _check_flags(request, op)
    workers = v.number("--workers", request.workers, v.WORKERS)
    seed = v.number("--seed", request.seed, v.SEED)
    burst = None if request.burst is None else v.number("--burst", request.burst, v.BURST_TEXTS)
    count = None if request.requests is None else v.number("--requests", request.requests, v.SCHEDULED_REQUESTS)
    max_inflight = None if request.max_inflight is None else v.number("--max-inflight", request.max_inflight, v.USERS)
    concurrencies = v.number_list(
        "--concurrency", request.concurrency, v.USERS_OR_UNCAPPED if burst is not None else v.USERS
    )
    base = PointConfig(
        op=op,
        arrival=parse_arrival(request.arrival),
        max_inflight=max_inflight,
        burst=burst,
        duration_s=None if count is not None else _window(request),
        requests=count,
        warmup_s=v.duration("--warmup", request.warmup, v.WARMUP_SECONDS),
        workers=workers,
        timeout_s=v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS),
        seed=seed,
        max_error_rate=v.number("--max-error-rate", request.max_error_rate, v.ERROR_RATE),
    )
    documents = parse_documents(request.documents, seed)
    if burst is not None and not all(isinstance(d, int) for d in documents):
        raise UserError(
            "load: a burst sends its chunks in fixed batches; --documents A..B or poisson:M is for the closed and "
            "open loops"
        )
    sweep = SweepConfig(
        base,
        batches=v.number_list("--batch", request.batch, v.TEXTS_PER_REQUEST) or [1],
        concurrencies=concurrencies or [1],
        rates=v.number_list("--rate", request.rate, v.RATE),
        lengths=parse_lengths(request.lengths, seed),
        documents=documents or [10],
        repeat=v.number("--rounds", request.rounds, v.REPEATS)
        if request.interleave
        else v.number("--repeat", request.repeat, v.REPEATS),
    )
    return plan_sweep(sweep, request.requests_csv)


def _check_flags(request: LoadRequest, op: Op) -> None:
    """Flags that cannot go together, each refused with the line that says why."""
    if request.rate is not None and request.burst is not None:
        raise UserError("load: --rate (open loop) and --burst are different loops; give one")
    if request.duration is not None and request.requests is not None:
        raise UserError("load: give --duration or --requests, not both")
    if request.max_inflight is not None and (request.rate is None or request.max_inflight < 1):
        raise UserError("--max-inflight caps the open loop: give it a positive number, with --rate")
    if request.rate is not None and request.concurrency is not None:
        raise UserError(
            "load: --concurrency sets the closed loop (or a burst's cap); the open loop takes --rate and --max-inflight"
        )
    _check_sizes(request, op)
    if request.interleave:
        _check_interleave(request)
        return
    if request.slice is not None:
        raise UserError("load: --slice cuts the windows of an --interleave run")
    if request.max_time is not None:
        raise UserError("load: --max-time budgets an --interleave run (its rounds); give --duration for a sweep")
    given = [flag for flag, name in _INTERLEAVE_ONLY if getattr(request, name) != _DEFAULTS[name]]
    if given:  # was ignored unsaid (--too-busy fail, --rounds 5: exit 0); --slice alone was refused
        raise UserError(f"load: {', '.join(given)} shape an --interleave run's rounds; give --interleave or leave out")


# Options only --interleave reads, and their defaults: given without it, refused rather than ignored.
_INTERLEAVE_ONLY = (("--rounds", "rounds"), ("--window", "window"), ("--too-busy", "too_busy"))
_DEFAULTS = {f.name: f.default for f in fields(LoadRequest)}


def _check_sizes(request: LoadRequest, op: Op) -> None:
    """--batch for embed, --documents for rerank; a documents distribution for the closed and open loops."""
    if op == Op.RERANK and request.batch is not None:
        raise UserError("load: rerank sends one query with --documents candidates per request; --batch is for embed")
    if op == Op.EMBED and request.documents is not None:
        raise UserError("load: --documents is for --op rerank")


def _window(request: LoadRequest) -> float:
    """The measured time of a point: --duration, or each window's --window with --interleave."""
    if request.interleave:
        return v.duration("--window", request.window, v.SECONDS)
    return v.duration("--duration", request.duration or "10s", v.SECONDS)


def _check_interleave(request: LoadRequest) -> None:
    """What --interleave measures otherwise: one window per endpoint and round, of --window each."""
    given = [
        flag
        for flag, value in (
            ("--duration", request.duration),
            ("--requests", request.requests),
            ("--burst", request.burst),
            ("--requests-csv", request.requests_csv),
            ("--ray", request.ray),
        )
        if value is not None
    ]
    if request.repeat != 1:
        given.append("--repeat")
    if given:
        raise UserError(
            f"load --interleave: {', '.join(given)} not taken with --interleave (each window is --window long, "
            "--rounds rounds; bursts, CSV rows and Ray workers are not interleaved)"
        )
    if request.max_time is not None and request.rounds != _DEFAULTS["rounds"]:
        raise UserError("load --interleave: --rounds or --max-time, not both (--max-time adds rounds until it decides)")
    if request.rounds < 2:
        raise UserError(f"load --interleave: --rounds {request.rounds}: give at least 2 (one round has no spread)")
    if request.too_busy not in set(CountAs):
        raise UserError(f"load --interleave: --too-busy {request.too_busy!r}: expected pass or fail")


def gate_limits(request: LoadRequest) -> GateConfig:
    """--min-throughput-ratio and --max-p99-increase, checked and named as `compare` checks them."""
    limits = (request.min_throughput_ratio, request.max_p99_increase)
    if not request.interleave and any(limit is not None for limit in limits):
        raise UserError("load: --min-throughput-ratio and --max-p99-increase gate an --interleave run")
    return build_gate_config(GateOptions(min_throughput_ratio=limits[0], max_p99_increase=limits[1]))


def _op(text: str, is_rerank: bool) -> Op:
    """`--op`, else the endpoints' kind."""
    if not text:
        return Op.RERANK if is_rerank else Op.EMBED
    try:
        return Op(text)
    except ValueError:
        raise UserError(f"--op {text!r}: expected embed or rerank") from None


@dataclass(frozen=True)
class LoadPlan:
    """A load request checked: every spec and flag parsed once, into what the run (plain or interleaved) takes."""

    specs: list[EndpointSpec]
    sweep: SweepPlan
    gate: GateConfig  # --min-throughput-ratio, --max-p99-increase (an --interleave run's verdict)
    max_time_s: float | None = None  # --interleave --max-time: the rounds' budget; None: a fixed --rounds
    slices: int = 1  # --interleave --slice: slices per window


def check_load(request: LoadRequest, known: Mapping[str, EndpointSpec] | None = None) -> LoadPlan:
    """Every spec and flag checked, nothing read or opened: the CLI and a suite's validation use this one function
    (`known`: the suite's endpoint specs, parsed when it was read)."""
    specs = endpoint_specs(request.endpoints, known)
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UserError("load: endpoint names must differ")
    if len({s.is_rerank for s in specs}) > 1:
        raise UserError("load: mix of embedding and rerank endpoints; load one --op at a time")
    if request.interleave and len(specs) != 2:
        raise UserError(
            f"load --interleave: {len(specs)} endpoint(s) given; it compares two: -e A=SPEC (baseline) -e B=SPEC"
        )
    gate = gate_limits(request)
    csv = request.requests_csv
    if csv is not None and (csv.is_dir() or not csv.parent.is_dir()):
        raise UserError(f"--requests-csv {csv}: expected a file in an existing folder")
    if csv is not None:  # a user's file (an input too) is never replaced; an earlier export only with --overwrite
        header = ",".join(RequestsCsv.HEADER)
        check_out_file(csv, "--requests-csv", request.overwrite, _opens_with(header), f"not opening with {header}")
    sweep = sweep_of(request, specs[0].is_rerank)
    if not request.interleave:
        return LoadPlan(specs, sweep, gate)
    window_s = sweep.base.duration_s or 0.0
    max_time_s = None if request.max_time is None else v.duration("--max-time", request.max_time, v.MAX_TIME_SECONDS)
    slices = slices_per_window(window_s, request.slice, request.rate is not None)
    return LoadPlan(specs, sweep, gate, max_time_s, slices)


def _opens_with(header: str) -> Callable[[Path], bool]:
    def ours(path: Path) -> bool:
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.readline().rstrip("\r\n") == header

    return ours


def load_command(request: LoadRequest, checked: LoadPlan | None = None) -> list[LoadPointRecord]:
    """Run the sweep; the points measured, each judged (`status`). A point that measured nothing or had no
    success raises MeasurementFailed (exit 3) once the table and report are out. `checked`: the request's plan
    as the CLI or a suite checked it; else checked here."""
    from bench.report import write_report

    checked = checked or check_load(request)
    specs, plan = checked.specs, checked.sweep
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    check_request_memory(plan.points, workload)
    pools = pool_factory(request.ray, specs, "load")
    records: list[LoadPointRecord] = []
    output = Output(
        request.out,
        request.overwrite,
        report=write_report,
        show=show_points,
        say=print,
        progress=True,
        origin=request.origin,
    )
    run_load(specs, plan, workload, output, records.append, pools)
    raise_if_failed(records, request.out / "report.html")
    return records


def pool_factory(ray: str | None, specs: list[EndpointSpec], command: str) -> Callable[[int], Executor] | None:
    """What `--ray ADDRESS` makes of the workers: Ray actors on that cluster, or None (local worker processes).
    The head is checked like every flag, before any endpoint is asked anything; load and size share this."""
    if ray is None:
        return None
    if any(s.url is None for s in specs):
        raise UserError(f"{command}: --ray runs HTTP endpoints; in-process ones (reference, reference-rerank) run here")
    from bench.load.ray_workers import RayExecutor, check_reachable

    check_reachable(ray)
    return lambda workers: RayExecutor(ray, workers)
