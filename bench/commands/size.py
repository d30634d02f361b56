"""The plain function behind `ragbench size`: closed sweep, saturation search, bursts, recommendation.

Every measured point goes through the load sweep's own `measure_point` (same workers, histograms
and records as `ragbench load`) and is written to results.jsonl the moment it finishes, followed by
its GPU telemetry window; the `sizing` record with the recommendation comes last for each endpoint
and length. A Ctrl-C or a dead server keeps every finished point and ends with the `end` record.

`size` always answers: `--max-time` bounds the whole run (each point and probe is sized to fit what is left,
and the expected time is said at the start and after each point), and when the budget runs out, or SIGINT or
SIGTERM stops the run, the sizing record of what finished is written as a best-so-far (a lower bound) before
the run ends — exit 0 for the budget, 130/143 for the signals.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from bench.commands.load import pool_factory, raise_if_failed
from bench.core import values as v
from bench.core.errors import UserError
from bench.core.interrupt import uninterruptible
from bench.endpoints.spec import EndpointSpec, parse_endpoint_spec
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
    Budget,
    BudgetSpent,
    Economics,
    Probe,
    Saturation,
    Slo,
    choose_closed,
    closed_sweep,
    measurements_left,
    passes,
    recommend,
    saturation_from,
    saturation_search,
    sig3,
    texts_per_s,
    verdict,
)
from bench.sizing.telemetry import GpuSampler

LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
START_FRACTION = 0.5  # the saturation search starts at half the closed loop's best request rate
MAX_PROBE_S = 60.0
LOWEST_RATE_FRACTION = 1 / 16  # the search halves at most 4 times below its start
GROWTH = 2.0  # the search doubles the rate until a probe fails
# A measurement costs its warm-up and measured window and then some: a failing probe's queue drains after its
# window (up to the window again at twice capacity), the next point's workers start.
OVERRUN = 1.5
CLOSED_POINTS_PER_BATCH = 3  # what a closed-loop sweep usually measures per batch (before it is measured)
# Of --max-time, what is kept for the recommendation and the report after the last measurement.
REPORT_SHARE, REPORT_MAX_S = 0.1, 30.0


# A probe lasts at least this many SLOs: a rate ρ times capacity builds (ρ−1)·T seconds of queue in a probe of T s,
# so only an overload past SLO/T shows; 5 SLOs show one past 20% (3 s probes passed 3.45/s on a 2.5/s server
# under a 2 s SLO).
PROBE_SLOS = 5.0


def probe_duration(
    rate: float, duration_s: float, probe_requests: int, share_s: float = math.inf, slo_ms: float = 0.0
) -> float:
    """A probe at `rate` lasts `duration_s`, or long enough for `probe_requests`, at most MAX_PROBE_S, and at most
    its share of the time left (`share_s`), never under `duration_s` nor PROBE_SLOS × the SLO (`slo_ms`): a slow
    endpoint's probes hold fewer requests, which its verdict says."""
    floor = max(duration_s, PROBE_SLOS * slo_ms / 1000.0)
    return max(floor, min(probe_requests / rate, MAX_PROBE_S, share_s))


_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*=\s*(.+)$", re.IGNORECASE)


def parse_slo(slo: str | None, slo_p99_ms: float | None, max_error_rate: float) -> Slo:
    """`--slo p95=800ms` (any percentile) or `--slo-p99 MS` (the same as `--slo p99=MSms`): exactly one."""
    if (slo is None) == (slo_p99_ms is None):
        raise UserError("size: give the latency SLO once: --slo pNN=DURATION (e.g. p95=800ms) or --slo-p99 MS")
    if slo_p99_ms is not None:
        return Slo(v.number("--slo-p99", slo_p99_ms, v.LATENCY_MS), max_error_rate)
    match = _SLO.match(str(slo))
    if not match or not re.search(r"[a-z]\s*$", match.group(2)):
        raise UserError(f"--slo {slo!r}: expected pNN=DURATION with a unit, such as p99=2s or p95=800ms")
    percentile = v.number("--slo", match.group(1), v.SLO_PERCENTILE)
    return Slo(v.duration("--slo", match.group(2), v.LATENCY_SECONDS) * 1000.0, max_error_rate, percentile)


@dataclass
class SizeRequest:
    endpoints: list[str]
    slo_p99_ms: float | None  # `--slo-p99 MS`; None: `slo` gives the SLO
    out: Path
    slo: str | None = None  # `--slo p95=800ms`: the SLO on any percentile
    max_time: str | None = None  # `--max-time 240s`: the whole run's budget; None: no limit
    target_texts_per_s: float | None = None
    target_tokens_per_s: float | None = None
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
    max_time_s: float | None = None  # `--max-time`; None: no limit


def check(request: SizeRequest) -> SizePlan:
    """Every flag checked before anything is measured or written: one line, exit 2."""
    specs = [parse_endpoint_spec(s) for s in request.endpoints]
    if len({s.name for s in specs}) != len(specs):
        raise UserError("size: endpoint names must differ")
    if len({s.is_rerank for s in specs}) > 1:
        raise UserError("size: mix of embedding and rerank endpoints; size one --op at a time")
    op = request.op or ("rerank" if specs[0].is_rerank else "embed")
    if op not in ("embed", "rerank"):
        raise UserError(f"--op {request.op!r}: expected embed or rerank")
    v.number("--max-error-rate", request.max_error_rate, v.ERROR_RATE)
    slo = parse_slo(request.slo, request.slo_p99_ms, request.max_error_rate)
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
    max_time_s = v.duration("--max-time", request.max_time, v.MAX_TIME_SECONDS) if request.max_time else None
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
        slo=slo,
        economics=Economics(
            request.target_rps, request.gpu_hourly_usd, request.target_texts_per_s, request.target_tokens_per_s
        ),
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
        max_time_s=max_time_s,
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
    """One endpoint's measurements: each point measured, written, and its GPU window written after it; every
    point and probe sized to the budget left, the time still expected said after each."""

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
        budget: Budget,
        say: Callable[[str], None],
    ):
        self.endpoint, self.plan, self.request = endpoint, plan, request
        self.workload, self.pool, self.writer, self.sampler, self.report = workload, pool, writer, sampler, report
        self.budget, self.say = budget, say
        self.points: list[LoadPointRecord] = []
        self.search_left = 0  # measurements the saturation search still expects (its outlook), this one included
        self.probe_s = plan.duration_s  # the measured window of the search's next probe

    def measure(self, point: PointConfig) -> LoadPointRecord:
        self.budget.require((point.warmup_s + (point.duration_s or 0.0)) * OVERRUN)
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
        if record.loop == Loop.OPEN:
            self.search_left = max(0, self.search_left - 1)
            self.say(f"size: {self._verdict(record)}; {self._time_text(self._search_s())}")
        return record

    def _verdict(self, record: LoadPointRecord) -> str:
        """`2.5 requests/s offered: failed — scheduled p99 … from 60 requests (95% interval …)`."""
        slo = self.plan.slo
        outcome = "passed" if passes(record, slo, "scheduled") else "failed"
        judged = verdict(record, "scheduled", slo).text(slo, "scheduled")
        return f"{sig3(record.rate or 0.0)} requests/s offered: {outcome} — {judged}"

    def _search_s(self) -> float:
        return self.search_left * (self.plan.warmup_s + self.probe_s) * OVERRUN

    def _time_text(self, to_go_s: float) -> str:
        left = self.budget.left()
        capped = min(to_go_s, max(left, 0.0))
        budget = f" of the {sig3(self.budget.seconds)} s budget" if self.budget.seconds is not None else ""
        return f"{sig3(self.budget.spent)} s spent{budget}, about {sig3(capped)} s to go"

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

    def outlook(self, measurements: int) -> None:
        """The search expects `measurements` more: each probe gets its share of the budget left."""
        self.search_left = measurements

    def plan_probe(self, rate: float) -> None:
        """The next probe's length at `rate`: its share of the budget left among the measurements expected."""
        plan = self.plan
        share = self.budget.left() / max(self.search_left, 1) / OVERRUN - plan.warmup_s
        self.probe_s = probe_duration(rate, plan.duration_s, self.request.probe_requests, share, plan.slo.ms)

    def probe(self, rate: float, batch: int, length: int | None, seed: int) -> LoadPointRecord:
        plan = self.plan
        self.plan_probe(rate)
        config = self.point(Loop.OPEN, batch, length, rate=rate, arrival=plan.arrival, seed=seed)
        return self.measure(replace(config, duration_s=self.probe_s))

    def saturation(self, best: LoadPointRecord | None, length: int | None, probes: list[Probe]) -> None:
        """The saturation search at the closed loop's chosen batch, from half its request rate; its probes go into
        `probes` as they finish."""
        plan, request = self.plan, self.request
        if best is None:
            return
        seeds = iter(range(request.seed, request.seed + 10_000))
        start_rate = max(float(f"{best.throughput.requests_per_s * START_FRACTION:.3g}"), 0.01)  # 3 digits: labels
        self.outlook(measurements_left(None, None, request.tolerance, GROWTH, request.max_probes))
        self.plan_probe(start_rate)
        self.say(
            f"size: saturation search at batch {best.batch} from {sig3(start_rate)} requests/s offered, probes of "
            f"about {sig3(self.probe_s)} s: {self._time_text(self._search_s())}"
        )
        saturation_search(
            lambda rate: self.probe(rate, best.batch, length, next(seeds)),
            start_rate=start_rate,
            slo=plan.slo,
            tolerance=request.tolerance,
            max_probes=request.max_probes,
            min_rate=start_rate * LOWEST_RATE_FRACTION,
            growth=GROWTH,
            probes=probes,
            outlook=self.outlook,
        )

    def bursts(self, length: int | None) -> None:
        """Open WebUI's ingestion pattern (a file's chunks fired together), with what the search left of the budget:
        the bursts that do not fit are not measured, which the Open WebUI lines say; the answer stands."""
        if self.plan.op != Op.EMBED:
            return
        try:
            for batch in self.plan.burst_batches:
                for concurrency in self.plan.burst_concurrency:
                    self.measure(
                        self.point(Loop.BURST, batch, length, concurrency=concurrency, burst=self.request.burst)
                    )
        except BudgetSpent as spent:
            self.say(f"size: {spent} before every Open WebUI burst was measured; the saturation answer is whole")

    def size(self, length: int | None, telemetry: str) -> SizingRecord:
        """Closed sweep, the saturation search, then Open WebUI's bursts with whatever time is left. When the
        budget runs out, or a signal stops the run, the record of what finished (a best-so-far) is written too."""
        plan, request = self.plan, self.request
        start = len(self.points)
        probes: list[Probe] = []
        try:
            closed = closed_sweep(
                lambda b, c: self.measure(self.point(Loop.CLOSED, b, length, concurrency=c)),
                plan.sizes,
                request.max_concurrency,
                plan.slo,
            )
            self.saturation(choose_closed(closed, plan.slo).best, length, probes)
            self.bursts(length)
        except BudgetSpent as spent:
            self.say(f"size: {spent}: the answer is the best so far, a lower bound")
            return self.record(length, telemetry, start, probes, str(spent))
        except KeyboardInterrupt as stop:
            with uninterruptible():  # the best-so-far is written whole before the run ends (130/143)
                self.writer.write(
                    self.record(
                        length, telemetry, start, probes, f"stopped by {stop.args[0] if stop.args else 'SIGINT'}"
                    )
                )
            raise
        return self.record(length, telemetry, start, probes, None)

    def record(
        self, length: int | None, telemetry: str, start: int, probes: list[Probe], stopped: str | None
    ) -> SizingRecord:
        plan, request = self.plan, self.request
        saturation = saturation_from(probes, stopped, plan.slo)
        mine = self.points[start:]
        lines = recommend(mine, saturation, plan.slo, plan.economics, plan.ceiling_points if request.ceiling else None)
        return SizingRecord(
            endpoint=self.endpoint.spec.name,
            op=plan.op,
            length=length,
            slo_p99_ms=plan.slo.ms,
            max_error_rate=plan.slo.max_error_rate,
            saturation=_summary(saturation, plan.slo),
            lines=lines,
            telemetry=telemetry,
            ceiling=str(request.ceiling) if request.ceiling else None,
            slo_percentile=plan.slo.percentile if plan.slo.percentile != 99.0 else None,
            stopped=stopped,
        )


def _summary(saturation: Saturation, slo: Slo) -> SaturationSummary:
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
                requests=p.point.requests.ok or None,
                confirmed=(passes(p.confirmation, slo, "scheduled") if p.confirmation is not None else None),
            )
            for p in saturation.probes
        ],
        lower_bound=saturation.lower_bound,
        capacity_changes=saturation.capacity_changes,
    )


def expected_text(plan: SizePlan, request: SizeRequest) -> str:
    """What one endpoint and length will probably take, said before anything is measured."""
    point_s = plan.warmup_s + plan.duration_s
    closed_s = len(plan.sizes) * CLOSED_POINTS_PER_BATCH * point_s
    bursts = len(plan.burst_batches) * len(plan.burst_concurrency) if plan.op == Op.EMBED else 0
    probes = measurements_left(None, None, request.tolerance, GROWTH, request.max_probes)
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


def run_size(
    request: SizeRequest,
    report: Callable[[LoadPointRecord], None] = lambda r: None,
    say: Callable[[str], None] = lambda text: None,
) -> Path:
    """Size every endpoint at every length; returns the results path. Everything is checked before `out` is
    touched; the sizing lines and the report follow whatever finished (bench.results.lifecycle). `say` hears
    the time expected, at the start and as the run goes."""
    from bench.report import write_report

    output = Output(request.out, request.overwrite, report=write_report, show=show_sizing, say=print)
    plan = check(request)
    budget = Budget(plan.max_time_s, reserve_s=min(REPORT_SHARE * (plan.max_time_s or 0.0), REPORT_MAX_S))
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
            # Once `--out` is taken (open_run): a refused folder is one line on stderr, nothing before it.
            say(expected_text(plan, request))
            for endpoint in endpoints:
                session = _Session(endpoint, plan, request, workload, pool, run, sampler, report, budget, say)
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
        slo = f"p{record.slo_percentile or 99:g} SLO {sig3(record.slo_p99_ms)} ms"
        best = f" — best so far ({record.stopped}): a lower bound" if record.stopped else ""
        print(f"\n{record.endpoint} ({record.op}, length {record.length}), {slo}{best}:")
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
        "slo_ms": plan.slo.ms,
        "slo_percentile": plan.slo.percentile,
        "max_error_rate": plan.slo.max_error_rate,
        "max_time_s": plan.max_time_s,
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
