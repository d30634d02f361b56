"""The plain function behind `ragbench size`: its flags checked into a plan, then every endpoint sized.

`size` always answers: `--max-time` bounds the whole run (each point and probe is sized to fit what is left,
and the expected time is said at the start and after each point), and when the budget runs out, or SIGINT or
SIGTERM stops the run, the sizing record of what finished is written as a best-so-far (a lower bound) before
the run ends — exit 0 for the budget (3 when no probe was measured), 130/143 for the signals. A Ctrl-C or a
dead server keeps every finished
point and ends with the `end` record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.load import pool_factory
from bench.commands.load_console import raise_if_failed
from bench.commands.options import (
    ARRIVAL_SEED,
    ENDPOINTS,
    MAX_ERROR_RATE_FLAG,
    OP,
    OVERWRITE,
    RAY,
    ROUTE,
    SLO,
    TEXTS,
    TIMEOUT,
    WORKERS,
    Flag,
    option,
)
from bench.commands.size_answer import nothing_measured, show_sizing
from bench.commands.specs import endpoint_specs
from bench.core import values as v
from bench.core.errors import MeasurementFailed, UserError
from bench.load.endpoint import close_endpoints, open_endpoints
from bench.load.lengths import parse_documents, parse_lengths
from bench.load.points import MAX_ERROR_RATE
from bench.load.pool import load_pool, worker_pool
from bench.load.schedule import parse_arrival
from bench.load.stop_time import StopTime
from bench.load.workload import load_workload
from bench.results.lifecycle import Output, open_run
from bench.results.outdir import RESULTS_FILE
from bench.results.provenance import Origin
from bench.results.schema import CeilingPoint, LoadPointRecord, Op
from bench.results.store import read_results
from bench.sizing.budget import run_budget
from bench.sizing.economics import Economics
from bench.sizing.plan import SizePlan, check_memory, expected_text, size_header
from bench.sizing.session import Outlets, SizeSession
from bench.sizing.slo import Slo, parse_slo
from bench.sizing.telemetry import gpu_telemetry
from bench.sizing.verdict import requests_to_bound


@dataclass
class SizeRequest:
    """`ragbench size`'s options, each declared once, here; `out` is the command line's --out."""

    endpoints: list[str] = field(metadata=option(ENDPOINTS))
    out: Path
    slo_p99_ms: float | None = field(
        default=None,
        metadata=option(
            Flag(("--slo-p99",), "Latency SLO: p99 in milliseconds (scheduled, in the open loop); = --slo p99=MSms.")
        ),
    )
    slo: str | None = field(
        default=None,
        metadata=option(SLO),
    )
    max_time: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--max-time",),
                "Budget for the whole run, e.g. 240s or 5m: probes fit in it; when it runs out the answer is the best "
                "so far (a lower bound), exit 0.",
            )
        ),
    )
    op: str = field(default="", metadata=option(OP))
    lengths: str | None = field(
        default="128",
        metadata=option(
            Flag(
                ("--lengths",),
                "Tokens per text (words without --tokenizer), comma list, or from:DATASET (its corpus's lengths, "
                "drawn); each sized apart.",
            )
        ),
    )
    batches: str = field(
        default="1,8,32", metadata=option(Flag(("--batch",), "Batch sizes of the closed-loop sweep (embed)."))
    )
    documents: str = field(
        default="10,50",
        metadata=option(
            Flag(
                ("--documents",),
                "Candidates per query of the closed-loop sweep (rerank): numbers, or drawn per query from 10..100 "
                "(uniform) or poisson:40; each sized apart.",
            )
        ),
    )
    max_concurrency: int = field(
        default=32, metadata=option(Flag(("--max-concurrency",), "Highest closed-loop concurrency tried."))
    )
    max_error_rate: float = field(default=MAX_ERROR_RATE, metadata=option(MAX_ERROR_RATE_FLAG))
    target_rps: float | None = field(
        default=None,
        metadata=option(Flag(("--target-rps",), "Requests/s to serve (at the sized batch): replicas needed.")),
    )
    target_texts_per_s: float | None = field(
        default=None,
        metadata=option(
            Flag(("--target-texts-per-s",), "Texts/s to serve: replicas needed (instead of --target-rps).")
        ),
    )
    target_tokens_per_s: float | None = field(
        default=None,
        metadata=option(
            Flag(("--target-tokens-per-s",), "Tokens/s to serve: replicas needed (instead of --target-rps).")
        ),
    )
    gpu_hourly_usd: float | None = field(
        default=None,
        metadata=option(
            Flag(("--gpu-hourly-usd",), "Price of one replica's GPU per hour: cost per 1M texts and tokens.")
        ),
    )
    ceiling: Path | None = field(
        default=None,
        metadata=option(
            Flag(("--ceiling",), "Results of `ragbench ceiling`: the server's best texts/s as a fraction of it.")
        ),
    )
    arrival: str = field(
        default="poisson",
        metadata=option(
            Flag(("--arrival",), "Open-loop arrivals of the saturation probes: constant, poisson or gamma:CV.")
        ),
    )
    duration: str = field(default="3s", metadata=option(Flag(("--duration",), "Measured time per point and probe.")))
    warmup: str = field(default="1s", metadata=option(Flag(("--warmup",), "Warm-up per point and probe, excluded.")))
    burst: int = field(
        default=64, metadata=option(Flag(("--burst",), "Texts (chunks of one file) in the Open WebUI ingestion burst."))
    )
    burst_batches: str = field(
        default="1,8,32", metadata=option(Flag(("--burst-batch",), "RAG_EMBEDDING_BATCH_SIZE values tried."))
    )
    burst_concurrency: str = field(
        default="1,4,0",
        metadata=option(
            Flag(("--burst-concurrency",), "RAG_EMBEDDING_CONCURRENT_REQUESTS values tried (0 = unlimited).")
        ),
    )
    max_probes: int = field(
        default=8, metadata=option(Flag(("--max-probes",), "Open-loop probes of the saturation search at most."))
    )
    # A probe lasts long enough for this many requests after its warm-up; default: the fewest whose slowest one
    # bounds the SLO's percentile at 95% (verdict.requests_to_bound: 72 for a p95, 368 for a p99).
    probe_requests: int | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--probe-requests",),
                "A probe's measured requests after its warm-up (at most 120 s): default, as many as bound the SLO's "
                "percentile (72 for a p95, 368 for a p99).",
            )
        ),
    )
    tolerance: float = field(
        default=0.05,
        metadata=option(
            Flag(("--tolerance",), "The search stops when the failing rate is within this fraction of the passing one.")
        ),
    )
    workers: int = field(default=1, metadata=option(WORKERS))
    texts: Path | None = field(default=None, metadata=option(TEXTS))
    dataset: Path | None = field(
        default=None,
        metadata=option(Flag(("--dataset",), "A dataset folder (corpus texts). Default: builtin:numpy-docs.")),
    )
    tokenizer: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--tokenizer",),
                "Model folder with tokenizer.json: --lengths in tokens, tokens/s (default: the --ceiling run's model).",
            )
        ),
    )
    nvml: bool | None = field(
        default=None,
        metadata=option(
            Flag(("--nvml/--no-nvml",), "Sample this host's GPUs (default: when the endpoint is on this host).")
        ),
    )
    timeout: str = field(default="30s", metadata=option(TIMEOUT))
    seed: int = field(default=0, metadata=option(ARRIVAL_SEED))
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    ray: str | None = field(default=None, metadata=option(RAY))
    # `--trace` (bench/sizing/trace_size.py): the largest speed-up of a recorded trace under the SLO
    trace: Path | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--trace",),
                "Size for a recorded trace (ragbench meter --record): the largest speed-up of it that meets the SLO "
                "on every route (docs/traffic.md).",
                suite=False,
            )
        ),
    )
    target_speed: str | None = field(
        default=None,
        metadata=option(Flag(("--target-speed",), "--trace: the growth to plan for, e.g. 3x: replicas.", suite=False)),
    )
    route: list[str] | None = field(
        default=None,
        metadata=option(ROUTE),
    )
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance


def check(request: SizeRequest) -> SizePlan:
    """Every flag checked before anything is measured or written: one line, exit 2."""
    specs = endpoint_specs(request.endpoints)
    if len({s.name for s in specs}) != len(specs):
        raise UserError("size: endpoint names must differ")
    if len({s.is_rerank for s in specs}) > 1:
        raise UserError("size: mix of embedding and rerank endpoints; size one --op at a time")
    try:
        op = Op(request.op or (Op.RERANK if specs[0].is_rerank else Op.EMBED))
    except ValueError:
        raise UserError(f"--op {request.op!r}: expected embed or rerank") from None
    slo, max_time_s = check_values(request)
    economics = _economics(request)
    if any(s.url is None for s in specs) and request.workers > 1:
        raise UserError("size: in-process endpoints (reference, reference-rerank) run in one worker; use --workers 1")
    ceiling_points, ceiling_model = _ceiling(request)
    return SizePlan(
        specs=specs,
        op=op,
        slo=slo,
        economics=economics,
        lengths=parse_lengths(request.lengths, request.seed),
        sizes=(
            parse_documents(request.documents, request.seed)
            if op == Op.RERANK
            else [*v.number_list("--batch", request.batches, v.TEXTS_PER_REQUEST)]
        ),
        burst_batches=v.number_list("--burst-batch", request.burst_batches, v.TEXTS_PER_REQUEST),
        burst_concurrency=v.number_list("--burst-concurrency", request.burst_concurrency, v.USERS_OR_UNCAPPED),
        duration_s=v.duration("--duration", request.duration, v.SECONDS),
        warmup_s=v.duration("--warmup", request.warmup, v.WARMUP_SECONDS),
        timeout_s=v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS),
        arrival=parse_arrival(request.arrival),
        max_concurrency=request.max_concurrency,
        max_probes=request.max_probes,
        probe_requests=request.probe_requests or requests_to_bound(slo.percentile),
        tolerance=request.tolerance,
        burst=request.burst,
        workers=request.workers,
        seed=request.seed,
        nvml=request.nvml,
        ceiling=request.ceiling,
        ceiling_points=ceiling_points,
        ceiling_model=ceiling_model,
        max_time_s=max_time_s,
    )


def check_values(request: SizeRequest) -> tuple[Slo, float | None]:
    """The SLO, the budget and every count, each in its range: the one check of `size` and `size --trace`."""
    v.number("--max-error-rate", request.max_error_rate, v.ERROR_RATE)
    slo = parse_slo(request.slo, request.slo_p99_ms, request.max_error_rate)
    max_time_s = v.duration("--max-time", request.max_time, v.MAX_TIME_SECONDS) if request.max_time else None
    _check_counts(request)
    return slo, max_time_s


def _economics(request: SizeRequest) -> Economics:
    """The target rate (in one unit at most) and the GPU price, each in its range."""
    targets = (
        ("--target-rps", request.target_rps, v.TARGET_RPS),
        ("--target-texts-per-s", request.target_texts_per_s, v.TARGET_TEXTS_PER_S),
        ("--target-tokens-per-s", request.target_tokens_per_s, v.TARGET_TOKENS_PER_S),
    )
    for flag, value, quantity in (*targets, ("--gpu-hourly-usd", request.gpu_hourly_usd, v.HOURLY_USD)):
        if value is not None:
            v.number(flag, value, quantity)
    given = [flag for flag, value, _ in targets if value is not None]
    if len(given) > 1:
        raise UserError(f"size: {' and '.join(given)}: give the target once, in one unit")
    return Economics(
        request.target_rps, request.gpu_hourly_usd, request.target_texts_per_s, request.target_tokens_per_s
    )


def _check_counts(request: SizeRequest) -> None:
    v.number("--max-concurrency", request.max_concurrency, v.USERS)
    v.number("--max-probes", request.max_probes, v.PROBES)
    if request.probe_requests is not None:
        v.number("--probe-requests", request.probe_requests, v.PROBE_REQUESTS)
    v.number("--workers", request.workers, v.WORKERS)
    v.number("--burst", request.burst, v.BURST_TEXTS)
    v.number("--seed", request.seed, v.SEED)
    if not 0 < request.tolerance < 1:
        raise UserError(f"--tolerance {request.tolerance}: expected a fraction in (0, 1)")


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


def run_size(
    request: SizeRequest,
    report: Callable[[LoadPointRecord], None] = lambda r: None,
    say: Callable[[str], None] = lambda text: None,
    plan: SizePlan | None = None,
) -> Path:
    """Size every endpoint at every length; returns the results path. Everything is checked before `out` is
    touched; the sizing lines and the report follow whatever finished (bench.results.lifecycle). `say` hears
    the time expected, at the start and as the run goes; `plan`: the request as the caller checked it."""
    from bench.report import write_report

    output = Output(
        request.out, request.overwrite, report=write_report, show=show_sizing, say=print, origin=request.origin
    )
    plan = plan or check(request)
    budget = run_budget(plan.max_time_s)
    pools = pool_factory(request.ray, plan.specs, "size")
    # Local worker processes share a stop time with the session: a probe whose failure is certain ends early.
    stop = StopTime() if pools is None else None
    pools = pools or (lambda workers: worker_pool(workers, stop))
    workload = load_workload(request.texts, request.dataset, request.tokenizer or plan.ceiling_model)
    check_memory(plan, workload)
    endpoints = open_endpoints(plan.specs, plan.op, plan.timeout_s)  # a wrong URL, key or model: nothing written
    sessions: list[SizeSession] = []
    try:
        with (
            open_run(output, size_header(plan, workload)) as run,
            gpu_telemetry(plan.nvml, plan.specs) as (sampler, telemetry),
            load_pool(endpoints, plan.op, plan.workers, pools) as pool,
        ):
            # Once `--out` is taken (open_run): a refused folder is one line on stderr, nothing before it.
            say(expected_text(plan))
            for endpoint in endpoints:
                session = SizeSession(endpoint, plan, workload, pool, budget, Outlets(run, sampler, report, say))
                session.stop = stop
                sessions.append(session)
                for length in plan.lengths:
                    run.write(session.size(length, telemetry))
    finally:
        close_endpoints(endpoints)
    # After the `end` record (the run is complete): a point with no success sized nothing, exit 3. Points past
    # the error limit are the search's own business (a failed probe), not a failed measurement.
    points = [p for session in sessions for p in session.points]
    raise_if_failed(points)
    if not points:
        raise MeasurementFailed(nothing_measured(plan.max_time_s))
    return output.results
