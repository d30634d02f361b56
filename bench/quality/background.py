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
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from bench.core import values
from bench.core.progress import console
from bench.datasets.model import Dataset
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.lengths import LengthsFrom
from bench.load.merge import merge_shares
from bench.load.points import PointConfig
from bench.load.pool import load_pool, worker_pool
from bench.load.share import ShareResult
from bench.load.shares import check_schedule, plans_starting
from bench.load.stop_time import StopTime
from bench.load.worker import run_share
from bench.load.workload import DISTINCT_REQUESTS, MAX_SOURCE_TEXTS, Workload, token_counter
from bench.quality.background_spec import BackgroundSpec, CountedBy, Sized
from bench.quality.under_load import rate_text
from bench.results.schema import LoadPointRecord, Loop, Op, PointStatus
from bench.results.store import read_results

IDLE_MARGIN = 4.0  # a stream is planned for this many times the idle searches (searches slow under load); stops early


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
            length = spec.lengths or stream_length(workload, spec.sized)
            load = BackgroundLoad(spec, opened[0], workload, pool, rates, stop, length)
            try:
                yield load
            except KeyboardInterrupt:
                if load.stream is not None:
                    console.print(draining(spec.endpoint, load.stream.point.rate or 0.0), soft_wrap=True)
                raise
    finally:
        close_endpoints(opened)


def draining(endpoint: str, rate: float) -> str:
    """What to say after Ctrl-C stopped a stream: the client stopped sending, not the server serving what it
    queued, so the next command's preflight may meet the backlog."""
    return (
        f"[yellow]--background: stopped during the {rate_text(rate)}/s stream to {endpoint}: the server may still "
        "be draining the requests it queued; wait for it before the next run (its preflight would meet the "
        "backlog)[/yellow]"
    )


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
    if sized.counted_by == CountedBy.TOKENIZER:  # its tokenizer is not in its results: words are the nearest cut here
        said = (
            f"--background-from: the size run sent {sized.length}-token texts (by its tokenizer, which its results do "
            f"not name): the stream cannot cut by it and sends {sized.length}-word texts, at least as long"
        )
    console.print(said, markup=False, highlight=False, soft_wrap=True)
    return sized.length


def _unit(sized: Sized) -> str:
    return "token" if sized.counted_by == CountedBy.TOKENIZER else "word"


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
        length: int | LengthsFrom | None = None,
    ):
        # words per text the stream sends (stream_length), or lengths=from:DATASET's; None: the texts as they are
        self.length = length
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
