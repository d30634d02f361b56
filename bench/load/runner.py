"""The load sweep: points of batch x concurrency (closed), offered rates (open) or bursts, each measured
after its own warm-up, one `load_point` record per point written as soon as it is measured.

The reusable core, for other executors (issue 11 runs the same shares in Ray actors):

    endpoint = LoadEndpoint.open(parse_endpoint_spec("tei=tei@http://127.0.0.1:8080"))
    start_at, plans = plans_starting(endpoint, point, workload)              # one SharePlan per worker
    shares = [run_share(plan) for plan in plans]                             # anywhere, concurrently
    record = merge_shares(endpoint.spec.name, point, shares, metrics_before, metrics_after)

`measure_point(endpoint, point, workload, executor)` does all of that with a local process pool.
Points (`PointConfig`, `SweepConfig`) live in bench/load/points.py.
"""

from __future__ import annotations

import csv
import math
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Executor, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import Any, ClassVar, TypeVar

import httpx
import numpy as np
from hdrh.histogram import HdrHistogram

import bench
from bench.core import values
from bench.core.errors import MeasurementFailed, UserError
from bench.core.http import new_client
from bench.core.progress import ProgressFactory
from bench.core.secrets import mask, mask_data
from bench.endpoints.base import Embedder, EmbedWire, Reranker, RerankWire, WireRequest
from bench.endpoints.client import endpoint_auth
from bench.endpoints.spec import EndpointSpec, open_endpoint
from bench.load import histograms
from bench.load.client import encode_request, target_of
from bench.load.points import PointConfig, SweepConfig, Window, judge, point_label
from bench.load.repeats import run_interleaved
from bench.load.schedule import open_schedule, share, split_count
from bench.load.server_view import MetricsReader, delta
from bench.load.worker import REQUEST_COLUMNS, SharePlan, ShareResult, StopTime, install_stop, run_share
from bench.load.workload import DISTINCT_REQUESTS, Workload
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.schema import (
    ClientView,
    Drain,
    Latencies,
    LoadPointRecord,
    LoadRequests,
    Loop,
    Op,
    RunHeader,
    ServerTimes,
    Throughput,
)
from bench.results.store import now_iso

START_LEAD_S = 0.25  # time for the plans to reach the worker processes before the first intended send
# A worker is saturated when the requests it drove took this share of what its CPU per request allows
# on a whole core (its own ceiling, measured in the point): the client, not the server, set the pace.
# The machine's load does not count: a descheduled client shows in `loop_lag_p99_ms`, not here.
CLIENT_SATURATED = 0.9
# After each point the runner waits until the server is idle again: a tiny probe request (the preflight's) answers
# within DRAIN_FACTOR times its idle latency (+ DRAIN_SLACK_S, for a probe of a millisecond on a busy machine),
# asked again every DRAIN_POLL_S, for at most the point's --timeout (DRAIN_MIN_S at least). Requests the client
# gave up on (timeouts) are still queued in the server: without it the next point, or the next command, measures
# that backlog.
IDLE_PROBES = 3  # at the preflight: the idle latency is the fastest of these
DRAIN_FACTOR = 3.0
DRAIN_SLACK_S = 0.02
DRAIN_POLL_S = 0.1
DRAIN_SHOWN_S = 1.0  # a drain longer than this is said in the console
DRAIN_MIN_S = 5.0  # the drain's bound: the point's --timeout, at least this (a short timeout leaves a long backlog)


class InProcessCall:
    """A picklable request for in-process endpoints: opens the endpoint once per worker process."""

    _opened: ClassVar[dict[tuple[str, str, tuple[tuple[str, str], ...]], Embedder | Reranker]] = {}

    def __init__(self, spec: EndpointSpec, op: Op, payloads: list[tuple[str | None, list[str]]]):
        self.spec, self.op, self.payloads = spec, op, payloads

    def endpoint(self) -> Embedder | Reranker:
        key = (self.spec.name, self.spec.kind, tuple(sorted(self.spec.params.items())))
        if key not in self._opened:
            self._opened[key] = open_endpoint(self.spec)
        return self._opened[key]

    def warm(self) -> None:
        """Load the model before the first measured call (reference kinds load lazily)."""
        self(0)

    def __call__(self, index: int) -> None:
        query, texts = self.payloads[index]
        endpoint = self.endpoint()
        if self.op == Op.RERANK and isinstance(endpoint, Reranker):  # check_op: a rerank op has a rerank endpoint
            endpoint.rerank(query or "", texts)
        elif isinstance(endpoint, Embedder):
            endpoint.embed(texts)
        else:
            raise TypeError(f"endpoint {self.spec.name}: cannot {self.op}")


class LoadEndpoint:
    """One endpoint as the load path sees it: its kind's wire (shared with the API client), target, auth."""

    def __init__(self, spec: EndpointSpec):
        self.spec = spec
        client = open_endpoint(spec)  # builds the wire from the spec's options; sends nothing
        self.in_process = spec.url is None
        # An HTTP kind's client holds its wire; an in-process one has none.
        wire = None if self.in_process else getattr(client, "wire", None)
        self.embed_wire: EmbedWire | None = None if spec.is_rerank else wire
        self.rerank_wire: RerankWire | None = wire if spec.is_rerank else None
        client.close()
        self.headers = {} if spec.url is None else endpoint_auth(spec.name, spec.url, spec.params.get("key_env"))[1]
        self.metrics = None if self.in_process else MetricsReader(self.request(("q", ["t"])).url, self.headers)
        self.idle_probe_s: float | None = None  # the probe's latency on the idle server (preflight)
        # Made once (not timed). Each probe passes its own timeout: a whole-request deadline, so a trickle ends.
        self.prober = None if self.in_process else new_client(values.TIMEOUT_SECONDS.high, self.headers)

    @property
    def wire(self) -> EmbedWire | RerankWire | None:
        return self.rerank_wire or self.embed_wire

    def request(self, payload: tuple[str | None, list[str]]) -> WireRequest:
        """One request on the kind's wire: a query and its documents (rerank), or texts (embed)."""
        query, texts = payload
        if self.rerank_wire is not None:
            return self.rerank_wire.request(query or "", texts)
        if self.embed_wire is None:
            raise RuntimeError(f"endpoint {self.spec.name}: in-process endpoints have no wire")
        return self.embed_wire.request(texts)

    def preflight(self, op: Op, timeout_s: float) -> None:
        """One small request through the API client before the sweep: a wrong URL, key or model fails
        here with one clear line, and a cold server's first (slow) answer is not left to a warm-up.
        It waits --timeout like every measured request: a hanging server is named as soon as one would be."""
        client = open_endpoint(self.spec, timeout_s)
        try:
            if isinstance(client, Reranker):  # check_op: the op is the endpoint's kind
                client.rerank("warm-up query", ["warm-up text", "another warm-up text"])
            else:
                dim = client.embed(["warm-up text"]).vectors.shape[1]
                if self.embed_wire is not None:
                    self.embed_wire.dim = dim  # every answer of the sweep must keep it (a changed one: bad_response)
        finally:
            client.close()
        self.idle_probe_s = min(self.probe(timeout_s) or math.inf for _ in range(IDLE_PROBES))

    def probe(self, timeout_s: float) -> float | None:
        """Seconds one tiny request (a text, or a query and two documents) took to answer; inf when it timed out,
        failed, or was refused as overloaded; None when no connection could be made (nothing there to wait for)."""
        if self.prober is None:
            raise RuntimeError(f"endpoint {self.spec.name}: in-process endpoints have no probe")
        wire = self.request(("warm-up query", ["warm-up text", "another warm-up text"][: 2 if self.rerank_wire else 1]))
        started = perf_counter()
        try:
            status = self.prober.request(wire.method, wire.url, content=wire.body(), timeout=timeout_s).status_code
        except httpx.ConnectError:
            return None
        except httpx.HTTPError:
            return math.inf
        # 429 / 503: no permit free, the queue is full (busy); any other answer came through the queue in its time
        # (a server refusing everything at once is not kept busy by a backlog).
        return math.inf if status in (429, 503) else perf_counter() - started

    def drain(self, timeout_s: float) -> Drain | None:
        """Wait until the server is idle again (DRAIN_FACTOR), for at most `timeout_s`; None for in-process ones
        and when the preflight's probes failed (no idle latency to compare with)."""
        if self.in_process or self.idle_probe_s is None or not math.isfinite(self.idle_probe_s):
            return None
        idle = self.idle_probe_s
        started = perf_counter()
        deadline = started + timeout_s
        while True:
            took = self.probe(max(0.001, min(timeout_s, deadline - perf_counter())))
            settled = took is not None and took <= DRAIN_FACTOR * idle + DRAIN_SLACK_S
            # Given up when no connection can be made (the server is gone) or the time is out.
            if settled or took is None or perf_counter() + DRAIN_POLL_S >= deadline:
                return Drain(
                    seconds=round(perf_counter() - started, 3),
                    idle=settled,
                    probe_ms=round(took * 1000, 3) if took is not None and math.isfinite(took) else math.nan,
                    idle_probe_ms=round(idle * 1000, 3),
                )
            time.sleep(DRAIN_POLL_S)

    def check_op(self, op: Op) -> None:
        if (op == Op.RERANK) != self.spec.is_rerank:
            kind = "a rerank" if self.spec.is_rerank else "an embedding"
            raise UserError(
                f"endpoint {self.spec.name}: {self.spec.kind} is {kind} endpoint; use --op "
                f"{'rerank' if self.spec.is_rerank else 'embed'}"
            )

    def plans(self, point: PointConfig, workload: Workload, start_at: float) -> list[SharePlan]:
        """One SharePlan per active worker: requests encoded once, the schedule split as `schedule.share` says."""
        workload = workload.with_length(point.length)
        payloads = _payloads(point, workload)
        template = SharePlan(
            worker=0,
            mode=point.loop,
            target=None,
            requests=[],
            inputs=[len(texts) for _, texts in payloads],
            tokens=_tokens(point, workload, payloads),
            start_at=start_at,
            warmup_s=point.warmup_s,
            duration_s=point.duration_s,
            timeout_s=point.timeout_s,
            wire=self.wire,
            log_requests=point.log_requests,
        )
        if self.in_process:
            template.call = InProcessCall(self.spec, point.op, payloads)
        else:
            wired = [self.request(payload) for payload in payloads]
            template.target = target = target_of(wired[0].url)
            template.requests = [encode_request(target, w.method, w.body(), self.headers) for w in wired]
        if point.loop == Loop.CLOSED:
            users = split_count(_set(point.concurrency), min(point.workers, _set(point.concurrency)))
            counts = split_count(point.requests, len(users)) if point.requests is not None else [None] * len(users)
            return [replace(template, worker=w, users=u, count=c) for w, (u, c) in enumerate(zip(users, counts))]
        if point.loop == Loop.OPEN:
            offsets = self.open_offsets(point)
            active = min(point.workers, point.max_inflight) if point.max_inflight else point.workers
            caps = split_count(point.max_inflight, active) if point.max_inflight else [None] * active
            # Offsets stay a numpy array: pickled to a worker in milliseconds, where a list of millions of floats
            # took seconds in which the driver, holding the GIL, could not even act on Ctrl-C.
            arrival = _set(point.arrival)
            shares = [share(offsets, w, active, arrival, point.seed) for w in range(active)]
            return [replace(template, worker=w, offsets=shares[w], max_inflight=caps[w]) for w in range(active)]
        return self._burst_plans(point, payloads, template)

    def _burst_plans(
        self, point: PointConfig, payloads: list[tuple[str | None, list[str]]], template: SharePlan
    ) -> list[SharePlan]:
        """Each worker replays its own requests in order (offsets index its `requests` list), no warm-up."""
        n = len(payloads)
        cap = point.concurrency or 0
        active = min(point.workers, cap, n) if cap else min(point.workers, n)
        caps = split_count(cap, active) if cap else [0] * active
        plans = []
        for w in range(active):
            mine = list(range(w, n, active))
            plans.append(
                replace(
                    template,
                    worker=w,
                    offsets=np.zeros(len(mine)),
                    users=caps[w],
                    warmup_s=0.0,
                    duration_s=None,
                    requests=[template.requests[i] for i in mine] if template.requests else [],
                    inputs=[template.inputs[i] for i in mine],
                    tokens=[template.tokens[i] for i in mine],
                    call=InProcessCall(self.spec, point.op, [payloads[i] for i in mine]) if template.call else None,
                )
            )
        return plans

    @staticmethod
    def open_offsets(point: PointConfig) -> np.ndarray:
        check_schedule([point])  # also the probes `size` chooses as it goes
        arrival, rate = _set(point.arrival), _set(point.rate)
        if point.requests is None:
            return open_schedule(arrival, rate, point.warmup_s + _set(point.duration_s), None, point.seed)
        warm = open_schedule(arrival, rate, point.warmup_s, None, point.seed) if point.warmup_s > 0 else np.zeros(0)
        measured = open_schedule(arrival, rate, None, point.requests, point.seed + 10_000)
        return np.concatenate((warm, point.warmup_s + measured))

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.prober is not None:
            self.prober.close()


T = TypeVar("T")


def _set(value: T | None) -> T:
    """A setting the point's loop always has (SweepConfig sets it): None here is a bug, not a user error."""
    if value is None:
        raise RuntimeError("load: a point without a setting its loop needs")
    return value


def _payloads(point: PointConfig, workload: Workload) -> list[tuple[str | None, list[str]]]:
    """Each request's query (rerank) and texts: a burst's chunks cut into batches (Open WebUI sends
    ceil(chunks / RAG_EMBEDDING_BATCH_SIZE) requests, the last one smaller), else the workload's requests."""
    if point.loop == Loop.BURST:
        burst = _set(point.burst)
        chunks = [workload.texts[i % len(workload.texts)] for i in range(burst)]
        batches = [chunks[i : i + point.batch] for i in range(0, burst, point.batch)]
        if point.op == Op.RERANK:
            return [(workload.queries[i % len(workload.queries)], docs) for i, docs in enumerate(batches)]
        return [(None, texts) for texts in batches]
    if point.op == Op.RERANK:
        return [(query, docs) for query, docs in workload.rerank_requests(point.batch)]
    return [(None, texts) for texts in workload.embed_batches(point.batch)]


def _tokens(point: PointConfig, workload: Workload, payloads: list[tuple[str | None, list[str]]]) -> list[int]:
    """Estimated tokens per request (the server's own count replaces them where it sends one)."""
    if point.op == Op.RERANK:
        q_tokens = workload.count_tokens([q or "" for q, _ in payloads])
        return [sum(q_tokens[i] + t for t in workload.count_tokens(docs)) for i, (_, docs) in enumerate(payloads)]
    return [sum(workload.count_tokens(texts)) for _, texts in payloads]


def check_schedule(points: list[PointConfig]) -> None:
    """An open loop's send times are computed before its point starts: at most values.SCHEDULED_REQUESTS."""
    for p in points:
        if p.loop == Loop.OPEN:
            scheduled = _set(p.rate) * (p.warmup_s + (p.duration_s or 0.0)) + (p.requests or 0)
            values.at_most(
                f"load: {point_label(p)} over {p.warmup_s:g} s of warm-up and "
                + (f"{p.requests} requests" if p.requests else f"{p.duration_s:g} s measured"),
                scheduled,
                values.SCHEDULED_REQUESTS,
                "lower --rate, --duration or --warmup",
            )


def check_request_memory(points: list[PointConfig], workload: Workload) -> None:
    """Each point's requests are encoded before it starts and copied to every worker: all copies together
    within values.REQUEST_MEMORY, estimated from the workload before anything is sent or written."""
    import json

    texts = workload.texts
    body = sum(len(json.dumps(t, ensure_ascii=False).encode()) for t in texts)  # what a wire body holds per text
    per_word = body / max(1, sum(len(t.split()) for t in texts))  # a text of N tokens has at most N words
    for p in points:
        per_text = body / len(texts) if p.length is None else p.length * per_word
        count = _set(p.burst) if p.loop == Loop.BURST else DISTINCT_REQUESTS * p.batch
        copies = 2 if p.loop == Loop.BURST else 1 + p.workers  # a burst's requests are split among the workers
        values.at_most(
            f"load: {point_label(p)} encodes {count:,} texts of about {per_text:,.0f} bytes, {copies} copies",
            count * per_text * copies,
            values.REQUEST_MEMORY,
            "lower --batch, --documents, --lengths, --burst or --workers",
        )


def merge_shares(
    endpoint: str,
    point: PointConfig,
    shares: list[ShareResult],
    workload: Workload,
    metrics_before: dict[str, Any] | None = None,
    metrics_after: dict[str, Any] | None = None,
) -> LoadPointRecord:
    """One point's record from its workers' shares: counts summed, histograms merged exactly."""
    examples: dict[str, str] = {}
    for s in shares:
        for cls, message in s.error_examples.items():
            examples.setdefault(cls, mask(message))
    merged = (
        {q: histograms.merge([s.histograms.get(q) for s in shares]) for q in shares[0].histograms} if shares else {}
    )
    requests = _requests(shares)
    elapsed = measured_window(point, shares)
    warmups = [s.warmup_longest_s for s in shares if s.warmup_longest_s is not None]
    window = Window(
        intended_s=requests.scheduled_s if requests.scheduled_s is not None else point.duration_s,
        measured_s=elapsed,
        warmup_longest_s=max(warmups) if warmups else None,
    )
    status, problem = judge(requests, point.max_error_rate, window)
    return LoadPointRecord(
        endpoint=endpoint,
        op=point.op,
        loop=point.loop,
        batch=point.batch,
        concurrency=point.concurrency,
        rate=point.rate,
        arrival=str(point.arrival) if point.arrival else None,
        duration_s=round(elapsed, 6),
        requests=requests,
        throughput=_throughput(shares, workload, elapsed),
        latency_ms=_latencies(point, merged),
        server_ms=ServerTimes(*(histograms.summary_ms(merged[q]) if merged else None for q in SERVER_QUANTITIES)),
        server_metrics=delta(metrics_before, metrics_after) if metrics_before and metrics_after else None,
        client=client_view(shares),
        max_inflight=point.max_inflight,
        burst=point.burst,
        length=point.length,
        documents=point.batch if point.op == Op.RERANK else None,
        warmup_s=point.warmup_s,
        histograms={q: histograms.encode(h) for q, h in merged.items() if h.get_total_count()},
        error_examples=examples,
        status=status,
        problem=problem,
        max_error_rate=point.max_error_rate,
    )


SERVER_QUANTITIES = ("queue", "tokenization", "inference")  # TEI's split of each answer (ServerTimes' fields)


def _requests(shares: list[ShareResult]) -> LoadRequests:
    errors: dict[str, int] = {}
    for s in shares:
        for cls, n in s.errors.items():
            errors[cls] = errors.get(cls, 0) + n
    scheduled = [s for s in shares if s.scheduled is not None]
    return LoadRequests(
        sent=sum(s.sent for s in shares),
        ok=sum(s.ok for s in shares),
        errors=errors,
        unsent=sum(s.unsent for s in shares),
        validated=sum(s.validated for s in shares),
        scheduled=sum(s.scheduled or 0 for s in scheduled) if scheduled else None,
        scheduled_s=round(max(s.scheduled_s or 0.0 for s in scheduled), 6) if scheduled else None,
    )


def _throughput(shares: list[ShareResult], workload: Workload, elapsed: float) -> Throughput:
    """Rates over the measured window (`elapsed` s); tokens counted by the server (x-compute-tokens) where it said,
    else by the workload's counter."""
    counted = sum(s.tokens_counted for s in shares)
    estimated = sum(s.tokens_estimated for s in shares)
    ok = sum(s.ok for s in shares)

    def per_s(n: float) -> float:
        return n / elapsed if elapsed > 0 else 0.0

    if not ok:
        tokens_source = None
    elif estimated == 0 and counted:
        tokens_source = "x-compute-tokens"
    elif counted:
        tokens_source = f"x-compute-tokens+{workload.tokens_source}"
    else:
        tokens_source = workload.tokens_source
    return Throughput(
        requests_per_s=per_s(ok),
        texts_per_s=per_s(sum(s.texts_ok for s in shares)),
        tokens_per_s=per_s(counted + estimated),
        tokens_source=tokens_source,
    )


def _latencies(point: PointConfig, merged: dict[str, HdrHistogram]) -> Latencies:
    """Service time always; the times from the intended send only where sends are scheduled (not the closed loop)."""
    scheduled = point.loop != Loop.CLOSED and bool(merged)
    return Latencies(
        service=histograms.summary_ms(merged["service"]) if merged else None,
        scheduled=histograms.summary_ms(merged["scheduled"]) if scheduled else None,
        dispatch_delay=histograms.summary_ms(merged["dispatch_delay"]) if scheduled else None,
    )


def measured_window(point: PointConfig, shares: list[ShareResult]) -> float:
    """Seconds from the end of the warm-up to the intended end of the point or the end of its last measured
    request (an answer, an error or a timeout), whichever is later: a server that stops answering stretches
    the window it failed in instead of shrinking it to its last good answer. `--requests` and bursts have no
    intended end: their window ends with their last request."""
    start = shares[0].first_measured if shares and shares[0].first_measured is not None else 0.0
    intended = start + point.duration_s if point.duration_s is not None and point.loop != Loop.BURST else start
    last = max((s.last_end for s in shares if s.last_end is not None), default=start)
    return max(intended, last) - start


def client_view(shares: list[ShareResult]) -> ClientView:
    """What the client spent: CPU per request (the yielding of an open loop waiting for its next send
    excluded), the ceiling that allows (requests/s on whole cores), and the share of it the point used.
    Saturated: a worker used CLIENT_SATURATED of its ceiling. Loop lag is reported: on a busy machine it
    says how late the OS ran the client, which is the machine's load, not the client's limit."""
    lag = histograms.summary_ms(histograms.merge([s.loop_lag for s in shares]))
    cpu = [100.0 * s.cpu_s / s.wall_s for s in shares if s.wall_s > 0]
    work = [(max(0.0, s.cpu_s - s.idle_cpu_s), s.handled, s.wall_s) for s in shares if s.wall_s > 0]
    busy = [w / wall for w, _, wall in work]
    per_request = [w / n for w, n, _ in work if n and w > 0]
    return ClientView(
        workers=len(shares),
        hosts=[s.host for s in shares],
        cpu_percent=round(sum(cpu) / len(cpu), 1) if cpu else None,
        cpu_per_request_us=round(1e6 * sum(per_request) / len(per_request), 2) if per_request else None,
        ceiling_requests_per_s=round(sum(1 / r for r in per_request), 1) if per_request else None,
        utilization=round(max(busy), 3) if busy else None,
        saturated=bool(busy and max(busy) >= CLIENT_SATURATED),
        loop_lag_p99_ms=lag.p99 if lag else None,
    )


def _start_worker(stop: StopTime | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle: it stops the workers
    install_stop(stop)


def worker_pool(workers: int, stop: StopTime | None = None) -> ProcessPoolExecutor:
    """Worker processes for the whole sweep (spawned: no inherited threads or sockets), started now; with `stop`,
    the driver can end their shares' measured windows early (bench/load/worker.py, StopTime)."""
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(stop,),
    )
    for f in [pool.submit(time.sleep, 0.2) for _ in range(workers)]:
        f.result()
    return pool


def stop_pool(pool: Executor) -> None:
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def plans_starting(endpoint: LoadEndpoint, point: PointConfig, workload: Workload) -> tuple[float, list[SharePlan]]:
    """The point's start and plans, the start set START_LEAD_S after they are built. Building them cuts the workload
    to the point's length with the tokenizer (seconds on a busy machine): a start set before that was past
    by the time the workers got their plans, the warm-up was lost and the first measured requests went out
    late, their delay counted in `scheduled` latency as if the server had kept them waiting."""
    plans = endpoint.plans(point, workload, start_at=0.0)
    start_at = perf_counter() + START_LEAD_S
    return start_at, [replace(plan, start_at=start_at) for plan in plans]


def run_plans(executor: Executor, plans: list[SharePlan], tick: Callable[[], None] = lambda: None) -> list[ShareResult]:
    futures = [executor.submit(run_share, plan) for plan in plans]
    while True:
        done, pending = wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)
        tick()
        if not pending or any(f.exception() for f in done):
            break
    return [f.result() for f in futures]


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
    if point.loop == Loop.BURST and point.warmup_s > 0:
        warm = replace(
            point, loop=Loop.CLOSED, concurrency=max(1, point.concurrency or 1), duration_s=0.0, requests=None
        )
        run_plans(executor, plans_starting(endpoint, warm, workload)[1], tick)
    metrics = endpoint.metrics
    before: list[dict[str, Any] | None] = []
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
    try:
        shares = run_plans(executor, plans, tick)
    finally:
        stopped.set()
    if reader is not None:
        reader.join()
    first = before[0] if before else None
    after = metrics.snapshot() if first and metrics is not None else None
    on_shares(shares)
    record = merge_shares(endpoint.spec.name, point, shares, workload, first, after)
    record.drain = endpoint.drain(max(point.timeout_s, DRAIN_MIN_S))
    return record


def unreachable(record: LoadPointRecord) -> bool:
    """Nothing answered at all: the server is gone (or never was); later points would measure nothing."""
    errors = record.requests.errors
    return record.requests.ok == 0 and bool(errors) and set(errors) <= {"connection", "timeout"}


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


def preflight(endpoints: list[LoadEndpoint], op: Op, timeout_s: float) -> None:
    """Every HTTP endpoint's preflight, before the output folder is touched (in-process ones warm in the pool)."""
    for endpoint in endpoints:
        if not endpoint.in_process:
            endpoint.preflight(op, timeout_s)


def open_endpoints(specs: list[EndpointSpec], op: Op, timeout_s: float) -> list[LoadEndpoint]:
    """Every endpoint opened for `op` and asked one small request (in-process ones warm in the pool), before
    the output folder is touched: a wrong kind, URL, key or model is one line, nothing written."""
    endpoints = [LoadEndpoint(spec) for spec in specs]
    try:
        for endpoint in endpoints:
            endpoint.check_op(op)
            if "timeout" in endpoint.spec.params:  # the preflight and every measured request wait the run's timeout
                raise UserError(
                    f"endpoint {endpoint.spec.name}: option timeout= is not used by a load: its --timeout "
                    "bounds every request"
                )
        preflight(endpoints, op, timeout_s)
    except BaseException:
        close_endpoints(endpoints)
        raise
    return endpoints


def close_endpoints(endpoints: list[LoadEndpoint]) -> None:
    for endpoint in endpoints:
        endpoint.close()


@contextmanager
def load_pool(
    endpoints: list[LoadEndpoint], op: Op, workers: int, pool_factory: Callable[[int], Executor] | None = None
) -> Iterator[Executor]:
    """The executor the shares run on (default: local worker processes), with every in-process endpoint's
    model loaded in it; stopped at the end, also on error or Ctrl-C."""
    pool = None
    try:
        pool = (pool_factory or worker_pool)(workers)
        for endpoint in endpoints:
            if endpoint.in_process:  # one worker (checked): the model loads in the process that measures
                pool.submit(InProcessCall(endpoint.spec, op, [("warm-up query", ["warm-up text"])]).warm).result()
        yield pool
    finally:
        if pool is not None:
            stop_pool(pool)


def load_header(
    command: str, workload: Workload, specs: list[EndpointSpec], seed: int, settings: dict[str, Any]
) -> RunHeader:
    """The `run` header of load and size: the workload, the endpoints (secrets masked) and the sweep's settings."""
    return RunHeader(
        command=command,
        created=now_iso(),
        ragbench_version=bench.__version__,
        dataset={
            "name": "load workload",
            "source": workload.source,
            "texts": len(workload.texts),
            "tokens_source": workload.tokens_source,
        },
        measures=[],
        measure_labels={},
        depth=0,
        seed=seed,
        targets=[s.name for s in specs],
        load=mask_data(
            {"endpoints": {s.name: {"kind": s.kind, "url": s.url, "options": s.params} for s in specs}, **settings}
        ),
    )


def run_load(
    specs: list[EndpointSpec],
    sweep: SweepConfig,
    workload: Workload,
    output: Output,
    on_point: Callable[[LoadPointRecord], None] = lambda r: None,
    pool_factory: Callable[[int], Executor] | None = None,
    requests_csv: Path | None = None,
) -> Path:
    """Every point for every endpoint; the results file keeps each finished point whatever happens next.
    Everything is checked before `output` is touched (bench.results.lifecycle). `pool_factory(workers)` makes
    the executor the shares run on (default: local worker processes; bench.load.ray_workers.RayExecutor: Ray actors).
    `requests_csv`: one row per measured request written there, point by point (RequestsCsv)."""
    base = sweep.base
    if any(s.url is None for s in specs) and base.workers > 1:
        raise UserError("load: in-process endpoints (reference, reference-rerank) run in one worker; use --workers 1")
    points = sweep.points()
    endpoints = open_endpoints(specs, base.op, base.timeout_s)
    settings = {
        "op": base.op,
        "points": len(points),
        "repeat": sweep.repeat,
        "workers": base.workers,
        "warmup_s": base.warmup_s,
        "duration_s": base.duration_s,
        "requests": base.requests,
        "timeout_s": base.timeout_s,
    }
    if requests_csv is not None:
        sweep = replace(sweep, base=replace(base, log_requests=True))
    try:
        with (
            open_run(output, load_header("load", workload, specs, base.seed, settings)) as run,
            load_pool(endpoints, base.op, base.workers, pool_factory) as pool,
            RequestsCsv(requests_csv) as rows,
        ):
            for endpoint in endpoints:
                _sweep_endpoint(endpoint, sweep, workload, pool, run, on_point, rows)
    finally:
        close_endpoints(endpoints)
    return output.results


class RequestsCsv:
    """`load --requests-csv FILE`: one row per measured request, as AIPerf's and k6's per-request exports: the
    endpoint, point, repeat, worker, then REQUEST_COLUMNS (times in seconds from the point's start; intended empty
    in the closed loop; outcome `ok` or the error class). Written after each point from what the workers kept;
    with no file, nothing is kept or written."""

    HEADER = ("endpoint", "point", "repeat", "worker", *REQUEST_COLUMNS)

    def __init__(self, path: Path | None):
        self.path = path
        self.file: Any = None

    def __enter__(self) -> RequestsCsv:
        if self.path is not None:
            self.file = self.path.open("w", newline="", encoding="utf-8")
            self.writer = csv.writer(self.file)
            self.writer.writerow(self.HEADER)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()

    def write(self, endpoint: str, point: str, repeat: int, shares: list[ShareResult]) -> None:
        if self.file is None:
            return
        for result in shares:
            log = result.request_log or {}
            columns = [log.get(c, []) for c in REQUEST_COLUMNS]
            for row in zip(*columns):
                self.writer.writerow([endpoint, point, repeat, result.worker, *(_cell(value) for value in row)])
        self.file.flush()


def _cell(value: object) -> object:
    """Times to the microsecond; a closed loop's intended time (NaN) empty."""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6f}"
    return value


def _sweep_endpoint(
    endpoint: LoadEndpoint,
    sweep: SweepConfig,
    workload: Workload,
    pool: Executor,
    run: OpenRun,
    on_point: Callable[[LoadPointRecord], None],
    rows: RequestsCsv,
) -> None:
    """Every point of the sweep on one endpoint, each `sweep.repeat` times interleaved (bench/load/repeats.py);
    each point's record is written once its repeats are measured, and a dead server stops the sweep."""
    points = sweep.points()

    def measure(round_: int, index: int, point: PointConfig) -> LoadPointRecord:
        repeat = f" repeat {round_ + 1}/{sweep.repeat}" if sweep.repeat > 1 else ""
        label = f"{endpoint.spec.name} {index + 1}/{len(points)}{repeat} {point_label(point)}"

        def write_rows(shares: list[ShareResult]) -> None:
            rows.write(endpoint.spec.name, point_label(point), round_ + 1, shares)

        return measure_point(endpoint, point, workload, pool, _ticker(run.progress, label, point), write_rows)

    def emit(record: LoadPointRecord) -> None:
        run.write(record)
        on_point(record)

    def check(record: LoadPointRecord) -> None:
        stop_if_unreachable(endpoint, record, "the sweep")

    run_interleaved(points, sweep.repeat, measure, emit, sweep.base.seed, check)


def _ticker(progress: ProgressFactory, description: str, point: PointConfig) -> Callable[[], None]:
    """A progress bar per point, advanced by the clock (workers run in other processes)."""
    planned = None if point.duration_s is None or point.loop == Loop.BURST else point.warmup_s + point.duration_s
    advance = progress(description, int(planned * 10) if planned else None)
    started = perf_counter()
    shown = [0]

    def tick() -> None:
        now = int((perf_counter() - started) * 10)
        if planned is not None:
            now = min(now, int(planned * 10))
        if now > shown[0]:
            advance(now - shown[0])
            shown[0] = now

    return tick
