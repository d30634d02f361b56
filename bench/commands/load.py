"""The plain function behind `ragbench load`: check every flag first (one line, exit 2), then run the sweep."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.commands.options import ARRIVAL_SEED, ENDPOINTS, OP, OVERWRITE, RAY, TEXTS, TIMEOUT, WORKERS, Flag, option
from bench.core import values as v
from bench.core.errors import MeasurementFailed, UserError
from bench.endpoints.spec import EndpointSpec, parse_endpoint_spec
from bench.gate.config import GateConfig, build_gate_config
from bench.gate.options import GateOptions
from bench.load import histograms
from bench.load.endpoint import DRAIN_SHOWN_S
from bench.load.interleave_slices import slices_per_window
from bench.load.lengths import parse_documents, parse_lengths
from bench.load.plan import SweepPlan, plan_sweep
from bench.load.points import (
    BEHIND,
    ERRORS,
    FAILED,
    MAX_ERROR_RATE,
    PointConfig,
    SweepConfig,
    error_rate,
    point_label,
)
from bench.load.repeats import interval_text
from bench.load.requests_csv import RequestsCsv
from bench.load.schedule import parse_arrival
from bench.load.shares import check_request_memory
from bench.load.sweep import run_load
from bench.load.workload import load_workload
from bench.results.lifecycle import Output
from bench.results.outdir import check_out_file
from bench.results.provenance import Origin
from bench.results.schema import LatencySummary, LoadPointRecord, Loop, Op
from bench.results.store import Results

if TYPE_CHECKING:
    from rich.table import Table


@dataclass
class LoadRequest:
    """`ragbench load`'s options and a suite's [[load]] entry, each declared once, here; `out` is the command
    line's --out or the suite's folder for the entry."""

    endpoints: list[str] = field(metadata=option(ENDPOINTS))
    out: Path
    op: str = field(default="", metadata=option(OP))
    batch: str | None = field(
        default=None, metadata=option(Flag(("--batch",), "Texts per request, comma list (embed). Default 1."))
    )
    concurrency: str | None = field(
        default=None,
        metadata=option(
            Flag(("--concurrency",), "Closed loop users (burst: in-flight cap, 0 = none), comma list. Default 1.")
        ),
    )
    rate: str | None = field(
        default=None, metadata=option(Flag(("--rate",), "Open loop instead: offered requests/s, comma list."))
    )
    arrival: str = field(
        default="constant", metadata=option(Flag(("--arrival",), "Open-loop arrivals: constant, poisson or gamma:CV."))
    )
    max_inflight: int | None = field(
        default=None,
        metadata=option(
            Flag(("--max-inflight",), "Open loop: at most N requests in flight; due ones wait in the client.")
        ),
    )
    burst: int | None = field(
        default=None,
        metadata=option(
            Flag(("--burst",), "Open WebUI ingestion: N texts as ceil(N/batch) requests at once, then drain.")
        ),
    )
    duration: str | None = field(
        default=None,
        metadata=option(Flag(("--duration",), "Measured time per point, e.g. 30s, 500ms, 2m. Default 10s.")),
    )
    requests: int | None = field(
        default=None, metadata=option(Flag(("--requests",), "Measured requests per point instead of --duration."))
    )
    warmup: str = field(
        default="2s", metadata=option(Flag(("--warmup",), "Warm-up per point, excluded from every figure."))
    )
    workers: int = field(default=1, metadata=option(WORKERS))
    texts: Path | None = field(default=None, metadata=option(TEXTS))
    dataset: Path | None = field(
        default=None,
        metadata=option(
            Flag(("--dataset",), "A dataset folder (corpus texts; queries for rerank). Default: builtin:numpy-docs.")
        ),
    )
    lengths: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--lengths",),
                "Cut texts to N tokens (words without --tokenizer), comma list; from:DATASET draws each length from "
                "that dataset's corpus texts (seeded).",
            )
        ),
    )
    documents: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--documents",),
                "Rerank: candidates per query, comma list; A..B (uniform) or poisson:M drawn per request. Default 10.",
            )
        ),
    )
    tokenizer: Path | None = field(
        default=None,
        metadata=option(Flag(("--tokenizer",), "Model folder with tokenizer.json for token counts and --lengths.")),
    )
    timeout: str = field(default="30s", metadata=option(TIMEOUT))
    seed: int = field(default=0, metadata=option(ARRIVAL_SEED))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    max_error_rate: float = field(
        default=MAX_ERROR_RATE,
        metadata=option(
            Flag(
                ("--max-error-rate",),
                "A point whose (errors + unsent) / requests is above this is marked ERRORS and the command exits 1 "
                "(a point with no success: exit 3).",
            )
        ),
    )
    repeat: int = field(
        default=1,
        metadata=option(
            Flag(
                ("--repeat",),
                "Measure each point N times, interleaved (A, B, C, A, B, C, ...): one record per point with its "
                "repeats and 95% bootstrap intervals, which compare gates on (docs/ci.md).",
            )
        ),
    )  # bench/load/repeats.py
    ray: str | None = field(default=None, metadata=option(RAY))
    requests_csv: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--requests-csv",),
                "Also write one row per measured request to this CSV file: point, worker, intended / actual send "
                "and end times, outcome, texts, tokens (docs/load.md).",
            )
        ),
    )  # bench.load.requests_csv.RequestsCsv
    # `--interleave` (bench/load/interleave.py): two endpoints, A then B, measured in alternating windows, paired
    interleave: bool = field(
        default=False,
        metadata=option(
            Flag(
                ("--interleave",),
                "Two endpoints (-e A=... -e B=...): each point measured on A and B in alternating windows, the order "
                "randomised per round (--seed); the ratio B/A per round, its paired interval and compare's verdict "
                "(exit 1 when it fails; docs/load.md).",
            )
        ),
    )
    rounds: int = field(
        default=10,
        metadata=option(Flag(("--rounds",), "--interleave: rounds (one window per endpoint each).")),
    )
    window: str = field(
        default="2s",
        metadata=option(Flag(("--window",), "--interleave: measured time of each window (after its --warmup).")),
    )
    slice: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--slice",),
                "--interleave: cut each window into slices this long, A's and B's alternated (A B B A ...) so both "
                "share the same seconds; warm-up once per point (docs/load.md).",
            )
        ),
    )  # bench/load/interleave_slices.py
    min_throughput_ratio: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--min-throughput-ratio",),
                "--interleave: fail when B/A texts/s is below this (compare's).",
                suite=False,
            )
        ),
    )
    max_p99_increase: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--max-p99-increase",),
                "--interleave: fail when B's p99 is more than this % above A's (compare's).",
                suite=False,
            )
        ),
    )
    # `--trace` (bench/load/trace_replay.py): a recorded trace replayed open-loop, compared with its recording
    trace: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--trace",),
                "Replay a trace (ragbench meter --record, or a CSV/JSONL of the same columns) open-loop at its "
                "recorded arrival times, texts per call and lengths; compared per route with the recording "
                "(docs/traffic.md).",
                suite=False,
            )
        ),
    )
    speed: float = field(
        default=1.0,
        metadata=option(Flag(("--speed",), "--trace: arrivals this many times faster (2: twice).", suite=False)),
    )
    loop: bool = field(
        default=False,
        metadata=option(
            Flag(("--loop",), "--trace: play the trace end to end again until --duration has passed.", suite=False)
        ),
    )
    route: list[str] | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--route",),
                "--trace: ROUTE=NAME, the trace's route replayed against endpoint NAME (-e NAME=...).",
                suite=False,
            )
        ),
    )
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance


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
    sweep = SweepConfig(
        base,
        batches=v.number_list("--batch", request.batch, v.TEXTS_PER_REQUEST) or [1],
        concurrencies=concurrencies or [1],
        rates=v.number_list("--rate", request.rate, v.RATE),
        lengths=parse_lengths(request.lengths, seed),
        documents=parse_documents(request.documents, seed) or [10],
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
    elif request.slice is not None:
        raise UserError("load: --slice cuts the windows of an --interleave run")


def _check_sizes(request: LoadRequest, op: Op) -> None:
    """--batch for embed, --documents for rerank; a documents distribution for the closed and open loops."""
    if op == Op.RERANK and request.batch is not None:
        raise UserError("load: rerank sends one query with --documents candidates per request; --batch is for embed")
    if op == Op.EMBED and request.documents is not None:
        raise UserError("load: --documents is for --op rerank")
    if request.burst is not None and not all(isinstance(d, int) for d in parse_documents(request.documents, 0)):
        raise UserError(
            "load: a burst sends its chunks in fixed batches; --documents A..B or poisson:M is for the closed and "
            "open loops"
        )


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
    if request.rounds < 2:
        raise UserError(f"load --interleave: --rounds {request.rounds}: give at least 2 (one round has no spread)")
    slices_per_window(_window(request), request.slice, request.rate is not None)


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


def check_load(request: LoadRequest) -> tuple[list[EndpointSpec], SweepPlan]:
    """Every spec and flag checked, nothing read or opened: the CLI and a suite's validation use this one function."""
    specs = [parse_endpoint_spec(s) for s in request.endpoints]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UserError("load: endpoint names must differ")
    if len({s.is_rerank for s in specs}) > 1:
        raise UserError("load: mix of embedding and rerank endpoints; load one --op at a time")
    if request.interleave and len(specs) != 2:
        raise UserError(
            f"load --interleave: {len(specs)} endpoint(s) given; it compares two: -e A=SPEC (baseline) -e B=SPEC"
        )
    gate_limits(request)
    csv = request.requests_csv
    if csv is not None and (csv.is_dir() or not csv.parent.is_dir()):
        raise UserError(f"--requests-csv {csv}: expected a file in an existing folder")
    if csv is not None:  # a user's file (an input too) is never replaced; an earlier export only with --overwrite
        header = ",".join(RequestsCsv.HEADER)
        check_out_file(csv, "--requests-csv", request.overwrite, _opens_with(header), f"not opening with {header}")
    return specs, sweep_of(request, specs[0].is_rerank)


def _opens_with(header: str) -> Callable[[Path], bool]:
    def ours(path: Path) -> bool:
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.readline().rstrip("\r\n") == header

    return ours


def load_command(request: LoadRequest) -> list[LoadPointRecord]:
    """Run the sweep; the points measured, each judged (`status`). A point that measured nothing or had no
    success raises MeasurementFailed (exit 3) once the table and report are out."""
    from bench.report import write_report

    specs, plan = check_load(request)
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


def show_points(results: Results) -> None:
    """The table of the points that finished, then each point that failed, passed its error limit or fell behind its
    schedule, named, and each wait for the server to become idle again that took long or did not end."""
    from rich.console import Console

    records = results.load_points
    if not records:
        return
    out = Console()
    Console(width=max(out.width, 150) if not out.is_terminal else None).print(summary_table(records))
    for r in records:
        if r.status in (FAILED, ERRORS, BEHIND):  # named, after the table: what the exit code is about, and why
            out.print(f"{r.status.upper()}: {problem_line(r)}", markup=False, highlight=False, soft_wrap=True)
        line = drain_line(r)
        if line:
            out.print(line, markup=False, highlight=False, soft_wrap=True)


def drain_line(record: LoadPointRecord) -> str | None:
    """A wait for the idle server after the point that took long or did not end (the next point's start), or None."""
    d = record.drain
    if d is None or (d.idle and d.seconds <= DRAIN_SHOWN_S):
        return None
    label = point_label(record, record.endpoint)
    if d.idle:
        return f"DRAIN: after {label} the server took {d.seconds:.1f} s to become idle again"
    return (
        f"DRAIN: after {label} the server was still busy {d.seconds:.1f} s later (a probe took {d.probe_ms:.0f} ms, "
        f"{d.idle_probe_ms:.0f} ms idle): what followed started on a busy server"
    )


def raise_if_failed(records: list[LoadPointRecord], report: Path | None = None) -> None:
    """Points that measured nothing or had no successful request make the command's measurement a failed one:
    MeasurementFailed (exit 3), raised once everything is written, naming them."""
    failed = [r for r in records if r.status == FAILED]
    if failed:
        named = "; ".join(problem_line(r) for r in failed[:3]) + (
            f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        )
        raise MeasurementFailed(
            f"{len(failed)} of {len(records)} load points measured nothing or had no successful request: {named}",
            report,
        )


def problem_line(record: LoadPointRecord) -> str:
    """`tei closed batch 1 conc 4: no request succeeded: ...`: a point that failed or passed its error limit, named."""
    return f"{point_label(record, record.endpoint)}: {record.problem}"


def summary_table(records: list[LoadPointRecord]) -> Table:
    """One line per point: what a user reads first."""
    from rich.table import Table

    table = Table(title="ragbench load", show_lines=False)
    for column in (
        "endpoint",
        "point",
        "req/s",
        "texts/s",
        "service p50",
        "service p99",
        "sched. p99",
        "errors",
        "unsent",
        "client",
    ):
        table.add_column(column, justify="right" if column not in ("endpoint", "point") else "left")

    def ms(block: LatencySummary | None, key: str = "p99") -> str:
        return histograms.quantile_text(block, key, 1, " ms")

    for r in records:
        point = point_label(r) + (f", drained in {r.duration_s:.2f} s" if r.loop == Loop.BURST else "")
        rate = f"{r.throughput.requests_per_s:.1f}"
        scheduled, window = r.requests.scheduled, r.requests.scheduled_s
        if (
            scheduled is not None and window
        ):  # beside what the schedule itself set (its count varies about rate x window)
            rate += f" of {scheduled / window:.1f} sched." + (" BEHIND" if r.status == BEHIND else "")
        utilization = r.client.utilization
        client = (
            "SATURATED" if r.client.saturated else (f"{utilization:.0%} of ceiling" if utilization is not None else "-")
        )
        table.add_row(
            r.endpoint,
            point,
            rate,
            f"{r.throughput.texts_per_s:.1f}" + interval_text(r),
            ms(r.latency_ms.service, "p50"),
            ms(r.latency_ms.service),
            ms(r.latency_ms.scheduled),
            _errors_text(r),
            str(r.requests.unsent),
            client,
        )
    return table


def _errors_text(r: LoadPointRecord) -> str:
    """A point's errors column: its error classes and counts, and its status where that is a failure."""
    errors = ", ".join(f"{k}:{v}" for k, v in sorted(r.requests.errors.items())) or "0"
    if r.status == FAILED and not r.requests.sent:
        return "FAILED: nothing measured"
    if r.status in (FAILED, ERRORS):
        return f"{r.status.upper()} {errors} ({error_rate(r.requests):.1%})"
    return errors
