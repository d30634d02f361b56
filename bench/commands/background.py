"""`quality --background 'EMB@rate=50,200&batch=8'`: quality measured while the load engine drives an open-loop
stream at one of the run's `-e` endpoints.

Each target runs once per background rate, rate 0 (idle) first, as a target of its own named `NAME@bgRATE`: the
existing records, report, comparisons (paired, Holm) and `compare` read them unchanged, and the loaded runs are
compared with the idle one like any two targets. One stream per rate, made by the load engine's own plans and
worker (`LoadEndpoint.plans`, `run_share` in the load pool, `merge_shares`): it starts before the first target of
its rate searches (after its warm-up, so every query falls in the measured window) and its `load_point` record is
written with the last target of that rate. A stream is planned to outlast the searches it covers (at least
IDLE_MARGIN times the idle searches' time; a search that still ran past it is said on the console) and is stopped
when the last target of its rate has finished searching, through the load pool's stop time (`StopTime`): its
record is the window it ran (at least `duration`), and what it would have sent after the stop was never
scheduled, so it is neither sent nor `unsent`. The record is judged as load judges a point (`max_error_rate=`,
load's default): a stream that sent nothing, had no success or was past its error limit leaves its rate's runs
not measured under load (bench/quality/under_load.py), which fails the command (exit 3). With `--background-from`
the stream sends texts cut to the length the `size` run measured its saturation at (its record's `length`), or
says why it cannot (`stream_length`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from bench.core import values
from bench.core.errors import UserError
from bench.core.progress import console
from bench.core.spec_grammar import parse_options
from bench.datasets.model import Dataset
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.merge import merge_shares
from bench.load.points import MAX_ERROR_RATE, PointConfig
from bench.load.pool import load_pool, worker_pool
from bench.load.schedule import Arrival, ArrivalKind, parse_arrival
from bench.load.share import ShareResult
from bench.load.shares import check_schedule, plans_starting
from bench.load.stop_time import StopTime
from bench.load.worker import run_share
from bench.load.workload import DISTINCT_REQUESTS, MAX_SOURCE_TEXTS, Workload, token_counter
from bench.quality.under_load import loaded_name, rate_text
from bench.results.schema import LoadPointRecord, Loop, Op, PointStatus
from bench.results.store import read_results
from bench.targets.base import TargetSpec

OPTIONS = ("rate", "batch", "arrival", "duration", "warmup", "timeout", "seed", "max_error_rate")
IDLE_MARGIN = 4.0  # a stream is planned for this many times the idle searches (searches slow under load); stops early


@dataclass(frozen=True)
class BackgroundSpec:
    endpoint: str  # the `-e` name the stream is sent to
    rates: list[float]  # requests/s, 0 (idle) first
    batch: int = 1
    arrival: Arrival = field(default_factory=lambda: Arrival(ArrivalKind.POISSON))
    min_duration_s: float = 5.0
    warmup_s: float = 1.0
    timeout_s: float = 30.0
    seed: int = 0
    max_error_rate: float = MAX_ERROR_RATE  # load's default: past it, the stream's runs are not measured under load
    sized: Sized | None = None  # --background-from: the size run the rates scale from, whose text length it sends


@dataclass(frozen=True)
class Sized:
    """What a `size` run measured its saturation at: the rate, and the texts it sent (their length, how counted)."""

    rate: float  # requests/s
    length: int | None  # tokens (or words) per text; None: the texts as they were
    counted_by: str  # "tokenizer" | "words": how the size run counted `length`


def parse_background(text: str, saturation: float | None = None, sized: Sized | None = None) -> BackgroundSpec:
    """`NAME@rate=50,200&batch=8&arrival=poisson&duration=5s&warmup=1s` -> BackgroundSpec; rate 0 always first.
    A rate `0.5x` is that fraction of `saturation` (requests/s), or of `sized`'s rate (`--background-from`)."""
    if sized is not None:
        saturation = sized.rate
    where = f"--background {text!r}"
    name, at, query = text.partition("@")
    if not at or not name:
        raise UserError(f"{where}: expected ENDPOINT@rate=R1,R2[&batch=N&arrival=poisson|constant]")
    options = parse_options(query, where)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UserError(f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    if "rate" not in options:
        raise UserError(f"{where}: rate=R1,R2,... is required (requests/s; 0 is the idle run, always measured)")
    given = [r.strip() for r in options["rate"].split(",")]
    if not any(given):
        raise UserError(f"{where}: rate= is empty: give requests/s, as rate=50,200 (rate=0 alone: the idle run only)")
    loaded = [r for r in (_rate(r, saturation, where) for r in given) if not _explicit_zero(r)]
    for r in loaded:  # 0 written as 0 is the idle run; a rate that a float reads as 0 is not
        if _float(r) == 0.0:
            raise UserError(f"{where}: rate {r} rounds to 0 requests/s (the idle run is rate 0, always measured)")
    spec = BackgroundSpec(
        endpoint=name,
        rates=[0.0, *values.number_list(f"{where}: rate", ",".join(loaded) or None, values.RATE)],
        batch=values.number(f"{where}: batch", options.get("batch", "1"), values.TEXTS_PER_REQUEST),
        arrival=_arrival(options.get("arrival", "poisson"), where),
        min_duration_s=values.duration(f"{where}: duration", options.get("duration", "5s"), values.SECONDS),
        warmup_s=values.duration(f"{where}: warmup", options.get("warmup", "1s"), values.WARMUP_SECONDS),
        timeout_s=values.duration(f"{where}: timeout", options.get("timeout", "30s"), values.TIMEOUT_SECONDS),
        seed=values.number(f"{where}: seed", options.get("seed", "0"), values.SEED),
        max_error_rate=values.number(
            f"{where}: max_error_rate", options.get("max_error_rate", str(MAX_ERROR_RATE)), values.ERROR_RATE
        ),
        sized=sized,
    )
    for rate in spec.rates:  # a stream's send times are computed when it starts: refused now, not mid-run
        scheduled = rate * (spec.warmup_s + spec.min_duration_s)
        values.at_most(
            f"{where}: rate {rate:,.15g}/s", scheduled, values.SCHEDULED_REQUESTS, "lower rate, duration or warmup"
        )
    return spec


def check_background(spec: BackgroundSpec, endpoints: dict[str, EndpointSpec]) -> None:
    if spec.endpoint not in endpoints:
        known = ", ".join(endpoints) or "none given"
        raise UserError(f"--background {spec.endpoint}: no such endpoint (-e NAME=SPEC; given: {known})")


def _rate(text: str, saturation: float | None, where: str) -> str:
    """A rate as text: requests/s as given, or `Fx` as F times the measured saturation rate."""
    if not text.endswith("x"):
        return text
    if saturation is None:
        raise UserError(f"{where}: rate {text} is a fraction of saturation; give --background-from SIZE_RESULTS")
    fraction = _float(text[:-1])
    if fraction is None or not fraction > 0:
        raise UserError(f"{where}: rate {text}: expected a positive fraction of saturation, as 0.5x")
    rate = round(fraction * saturation, 3)
    if rate == 0:
        raise UserError(f"{where}: rate {text} of {saturation:g}/s rounds to 0 requests/s (to 0.001/s)")
    return rate_text(rate)


def saturation_of(path: Path, endpoint: str) -> Sized:
    """The saturation rate `ragbench size` measured for `endpoint` (its sizing record's highest passing rate), with
    the length of the texts it measured it at."""
    results = read_results(path)
    found = [
        Sized(s.saturation.rate, s.length, str(results.header.dataset.get("tokens_source", "words")))
        for s in results.sizing
        if s.endpoint == endpoint and s.saturation is not None and s.saturation.rate is not None
    ]
    if len(found) != 1:
        what = "no saturation rate" if not found else f"{len(found)} saturation rates (one per length)"
        raise UserError(f"--background-from {path}: {what} for endpoint {endpoint}; run size for it alone")
    return found[0]


def background_spec(text: str, size_results: Path | None) -> BackgroundSpec:
    """--background, its fractions of saturation read from --background-from where given."""
    if size_results is None:
        return parse_background(text)
    return parse_background(text, sized=saturation_of(size_results, text.partition("@")[0]))


def _explicit_zero(text: str) -> bool:
    """`0`, `0.0`: the idle run as written (`1e-400`, which a float also reads as 0, is not)."""
    try:
        return Decimal(text) == 0
    except InvalidOperation:
        return False


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # values.number_list names it


def _arrival(text: str, where: str) -> Arrival:
    if text not in ("poisson", "constant"):
        raise UserError(f"{where}: arrival={text}: expected poisson or constant")
    return parse_arrival(text)


def expand_targets(specs: list[TargetSpec], rates: list[float]) -> tuple[list[TargetSpec], dict[str, float]]:
    """Every target once per rate, rate by rate (idle first), and each copy's rate by its name."""
    pairs = [(replace(s, given_name=loaded_name(s.name, rate)), rate) for rate in rates for s in specs]
    return [s for s, _ in pairs], {s.name: rate for s, rate in pairs}


@contextmanager
def background_load(
    spec: BackgroundSpec, endpoints: dict[str, EndpointSpec], dataset: Dataset, rates: dict[str, float]
) -> Iterator[BackgroundLoad]:
    """The stream's endpoint opened and asked one request (before the output folder is touched: a dead endpoint
    is one line, nothing written), the load pool started; both closed at the end, also on error or Ctrl-C."""
    endpoint_spec = endpoints[spec.endpoint]
    op = Op.RERANK if endpoint_spec.is_rerank else Op.EMBED
    opened = open_endpoints([endpoint_spec], op, spec.timeout_s)
    stop = StopTime()
    try:
        with load_pool(opened, op, 1, lambda workers: worker_pool(workers, stop)) as pool:
            workload = corpus_workload(dataset)
            length = stream_length(workload, spec.sized)
            yield BackgroundLoad(spec, opened[0], workload, pool, rates, stop, length)
    finally:
        close_endpoints(opened)


def corpus_workload(dataset: Dataset) -> Workload:
    """The stream's texts and queries: the run's own corpus (words counted as tokens)."""
    count, source_kind = token_counter(None)
    texts = [d.full_text for d in list(dataset.corpus.values())[:MAX_SOURCE_TEXTS] if d.full_text.strip()]
    queries = list(dataset.queries.values())[:DISTINCT_REQUESTS] or texts[:DISTINCT_REQUESTS]
    return Workload(texts, queries, f"{dataset.source} corpus", count, source_kind)


def stream_length(workload: Workload, sized: Sized | None) -> int | None:
    """The length (words) the stream cuts its texts to: that of the `size` run its rates scale from (a rate measured
    at 128-token texts is another load at full-length ones), said on the console; None, the texts as they are,
    where the size run sent them so or they cannot be cut to it (said, with why)."""
    if sized is None or sized.length is None:
        return None
    words = sum(len(t.split()) for t in workload.texts)
    if words < sized.length:
        console.print(
            f"[yellow]--background-from: the size run sent {sized.length}-{_unit(sized)} texts; this corpus has "
            f"{words} words in all, too few to cut one: the stream cannot, and sends its texts as they are[/yellow]"
        )
        return None
    said = f"--background-from: the stream sends {sized.length}-word texts, as the size run it scales from sent"
    if sized.counted_by == "tokenizer":  # its tokenizer is not in its results: words are the nearest cut here
        said = (
            f"--background-from: the size run sent {sized.length}-token texts (by its tokenizer, which its results do "
            f"not name): the stream cannot cut by it and sends {sized.length}-word texts, at least as long"
        )
    console.print(said, markup=False, highlight=False, soft_wrap=True)
    return sized.length


def _unit(sized: Sized) -> str:
    return "token" if sized.counted_by == "tokenizer" else "word"


@dataclass
class _Stream:
    point: PointConfig
    futures: list[Future[ShareResult]]
    window_start: float  # perf_counter of the end of its warm-up
    offsets: list[np.ndarray]  # each share's planned sends, seconds from the start (the plans' own arrays)

    @property
    def ends_at(self) -> float:
        """perf_counter of the planned end of its measured window."""
        return self.window_start + (self.point.duration_s or 0.0)


class BackgroundLoad:
    """`around_search` for run_quality: one open-loop stream per background rate, over that rate's targets."""

    def __init__(
        self,
        spec: BackgroundSpec,
        endpoint: LoadEndpoint,
        workload: Workload,
        pool: Executor,
        rates: dict[str, float],
        stop: StopTime,
        length: int | None = None,
    ):
        self.length = length  # words per text the stream sends (stream_length); None: the corpus texts as they are
        self.spec, self.endpoint, self.workload, self.pool, self.rates = spec, endpoint, workload, pool, rates
        self.stop = stop  # the pool's: ends a stream's window once its searches are done
        self.last = {rate: name for name, rate in rates.items()}  # dict order: the last target of each rate
        self.idle_s = 0.0  # the idle searches' time: what a stream must outlast
        self.stream: _Stream | None = None

    def resume(self, results: Path) -> None:
        """A resumed run's idle searches that finished before: their time is what its streams must outlast."""
        if results.is_file():
            idle = [t for t in read_results(results).targets if self.rates.get(t.name) == 0]
            self.idle_s += sum(t.search_seconds for t in idle)

    @contextmanager
    def around_search(self, name: str) -> Iterator[list[Any]]:
        rate = self.rates[name]
        records: list[Any] = []
        if self.stream is not None and self.stream.point.rate != rate:  # its last target failed before searching
            records.append(self._finish(self.stream))
            self.stream = None
        if rate > 0 and self.stream is None:
            self.stream = self._start(rate)
        started = perf_counter()
        yield records  # an exception goes on: the pool is stopped by its owner, the stream with it
        if rate == 0:
            self.idle_s += perf_counter() - started
        if self.stream is not None and perf_counter() > self.stream.ends_at:
            console.print(
                f"[yellow]--background: {name} searched past the end of its {rate_text(rate)}/s stream[/yellow]"
            )
        if self.stream is not None and self.last[rate] == name:
            records.append(self._finish(self.stream))
            self.stream = None

    def _start(self, rate: float) -> _Stream:
        spec = self.spec
        point = PointConfig(
            op=Op.RERANK if self.endpoint.spec.is_rerank else Op.EMBED,
            loop=Loop.OPEN,
            batch=spec.batch,
            rate=rate,
            arrival=spec.arrival,
            duration_s=_planned_s(spec, rate, IDLE_MARGIN * self.idle_s),
            warmup_s=spec.warmup_s,
            timeout_s=spec.timeout_s,
            seed=spec.seed + spec.rates.index(rate),
            max_error_rate=spec.max_error_rate,
            length=self.length,
        )
        check_schedule([point])
        start_at, plans = plans_starting(self.endpoint, point, self.workload)
        futures = [self.pool.submit(run_share, plan) for plan in plans]
        time.sleep(max(0.0, start_at + point.warmup_s - perf_counter()))  # the searches start in the measured window
        return _Stream(point, futures, start_at + point.warmup_s, [plan.offsets for plan in plans])

    def _finish(self, stream: _Stream) -> LoadPointRecord:
        """Stop the stream now (its shortest window, `duration`, kept), wait for what it has in flight, and its record
        over the window it ran."""
        stop_at = max(perf_counter(), stream.window_start + self.spec.min_duration_s)
        self.stop.set(stop_at)
        try:
            shares = [f.result() for f in stream.futures]
        finally:
            self.stop.clear()
        ran = replace(stream.point, duration_s=min(stream.point.duration_s or 0.0, stop_at - stream.window_start))
        record = merge_shares(self.endpoint.spec.name, ran, shares, self.workload)
        start, end = ran.warmup_s, ran.warmup_s + (ran.duration_s or 0.0)  # its measured window, from the start
        due = sum(int(np.count_nonzero((o >= start) & (o < end))) for o in stream.offsets)
        if due == 0 and record.status == PointStatus.FAILED:  # nothing to send, not a server that hung
            record.problem = (
                f"nothing measured: no request was due in its {ran.duration_s or 0.0:.1f} s window at "
                f"{rate_text(ran.rate or 0.0)}/s (a higher rate or a longer duration= sends some)"
            )
        return record


def _planned_s(spec: BackgroundSpec, rate: float, wanted_s: float) -> float:
    """A stream's planned measured seconds: at least `duration`, `wanted_s` where the schedule's bound allows it."""
    bound_s = values.SCHEDULED_REQUESTS.high / rate - spec.warmup_s
    return max(spec.min_duration_s, min(wanted_s, bound_s))
