"""One load worker: one event loop, its share of one sweep point, raw timings folded into HDR histograms.

    run_share(plan: SharePlan) -> ShareResult

is a plain function of serialisable values: the runner calls it in worker processes
(`--workers`), and any other executor (a Ray actor, issue 11) can call it the same way and merge
the results with `bench.load.runner.merge_shares`.

Three loops, one per `SharePlan.mode`:
- `closed`: `users` virtual users, each sending its next request when the previous answer is in;
- `open`: requests sent at the plan's intended offsets whatever the server does; with
  `max_inflight`, a due request waits in the client for a slot (its wait counts in `scheduled`)
  and those still waiting a timeout after the point's end are `unsent`;
- `burst`: every request due at once, at most `users` in flight (0: no cap), until drained.

A request is *measured* when its intended time (open, burst) or its send time (closed) falls after
the warm-up; only measured requests enter histograms and counts. Latencies are histogrammed for
successful answers only (a quick 429 is not a fast answer); errors are counted per class.

A pool's driver may end its shares' measured windows early (`StopTime`, shared with the worker processes
of `bench.load.runner.worker_pool`): an open or closed share then stops sending at that time, what was in
flight is awaited and counted, and what was due after it is never scheduled: neither sent nor `unsent`.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import socket
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Protocol

import numpy as np

from bench.core.http import loads
from bench.endpoints.base import EmbedWire, RerankWire
from bench.load import histograms
from bench.load.client import ConnectionLost, Pool, ProtocolViolation, Response, Target
from bench.results.schema import Loop

TICK_S = 0.01  # the loop-lag probe's period
# Answer bodies are parsed in full with the kind's wire: the first few always, then as long as parsing has
# taken at most this share of the worker's time (small bodies: all of them; 32 x 1024 floats: a sample),
# and every one after a bad one.
VALIDATE_FIRST = 5
VALIDATE_BUDGET = 0.05
# TEI's per-request split, in milliseconds, from its response headers.
SERVER_HEADERS = {b"x-queue-time": "queue", b"x-tokenization-time": "tokenization", b"x-inference-time": "inference"}
TOKENS_HEADER = b"x-compute-tokens"
STOP_POLL_S = 0.05  # a stoppable open loop waiting for its next send looks at the pool's stop time this often


class StopTime:
    """The time (perf_counter: CLOCK_MONOTONIC, one clock for the processes of a machine) at which the driver ends
    the measured window of every share running in its worker processes; +inf until it is set. A double in shared
    memory, handed to each worker process when it starts (`install_stop`, the pool's initializer)."""

    def __init__(self) -> None:
        self.shared = multiprocessing.get_context("spawn").RawValue("d", math.inf)

    def set(self, when: float) -> None:
        self.shared.value = when

    def clear(self) -> None:
        self.shared.value = math.inf

    def get(self) -> float:
        return float(self.shared.value)


_pool_stop: StopTime | None = None  # this worker process's pool's stop time (None: shares run as planned)


def install_stop(stop: StopTime | None) -> None:
    global _pool_stop
    _pool_stop = stop


def _stopped_at(when: float) -> bool:
    """The pool's driver ended the window at or before `when`."""
    return _pool_stop is not None and when >= _pool_stop.get()


@dataclass
class SharePlan:
    worker: int
    mode: Loop
    target: Target | None  # None for in-process endpoints
    requests: list[bytes]  # pre-encoded requests (HTTP) or pickled call arguments' indexes (in-process)
    inputs: list[int]  # texts per request (parallel to `requests`)
    tokens: list[int]  # estimated tokens per request, used when the server does not count them
    start_at: float  # perf_counter (CLOCK_MONOTONIC, shared by the processes of one machine)
    warmup_s: float
    duration_s: float | None  # measured seconds after the warm-up, or None with `count`
    count: int | None = None  # measured requests (this share's part of --requests), closed loop
    users: int = 1  # closed: virtual users; burst: in-flight cap (0 = none)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0))  # open/burst: intended offsets from start_at (s)
    max_inflight: int | None = None
    timeout_s: float = 30.0
    wire: EmbedWire | RerankWire | None = None  # the endpoint kind's wire (parse) for validating sampled answers
    call: Callable[[int], Any] | None = None  # in-process endpoints: call(request index) runs one request
    log_requests: bool = False  # keep one row per measured request (load --requests-csv); off: nothing kept


@dataclass
class ShareResult:
    worker: int
    sent: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    error_examples: dict[str, str] = field(default_factory=dict)
    unsent: int = 0
    validated: int = 0  # 2xx answers whose body was parsed in full (the rest: status only)
    texts_ok: int = 0
    tokens_counted: int = 0  # from x-compute-tokens
    tokens_estimated: int = 0  # from the workload, for answers without the header
    first_measured: float | None = None  # perf_counter of the first measured intended/sent time
    last_end: float | None = None  # perf_counter of the last measured request's end: answer, error or timeout
    histograms: dict[str, str | None] = field(default_factory=dict)  # quantity -> HDR encoding
    cpu_s: float = 0.0
    idle_cpu_s: float = 0.0  # CPU spent yielding until an intended send time (open loop): waiting, not work
    handled: int = 0  # requests this worker sent over `cpu_s`, warm-up included: the client's cost per request
    wall_s: float = 0.0
    loop_lag: str | None = None  # HDR of the loop-lag probe
    host: str = field(default_factory=socket.gethostname)  # the machine this share ran on (Ray: any of a cluster)
    warmup_longest_s: float | None = None  # the longest answer to a request sent before the window (warm-up)
    scheduled: int | None = None  # open loop: sends its schedule set in the measured window
    scheduled_s: float | None = None  # open loop: that window's seconds (the pool's stop time may cut it)
    request_log: dict[str, list[Any]] | None = None  # plan.log_requests: REQUEST_COLUMNS -> one value per request


# One row per measured request (load --requests-csv): times in seconds from the point's start (intended: NaN in the
# closed loop), the outcome `ok` or the error class, texts, and tokens (the server's count, else the workload's).
REQUEST_COLUMNS = ("index", "intended_s", "sent_s", "end_s", "outcome", "texts", "tokens")


class _Recorder:
    """Raw values while the point runs; histograms after it."""

    def __init__(self, plan: SharePlan):
        self.plan = plan
        self.window_start = plan.start_at + plan.warmup_s
        self.result = ShareResult(plan.worker)
        self.values = {
            name: array("q") for name in ("service", "scheduled", "dispatch_delay", *SERVER_HEADERS.values())
        }
        self.lag = array("q")
        self.parse_s = 0.0
        # Filled only with plan.log_requests: flat arrays, rows made after the point (off the hot path).
        self.log: dict[str, Any] | None = (
            {k: array("d") for k in ("intended_s", "sent_s", "end_s")}
            | {"index": array("l"), "tokens": array("l")}
            | {"outcome": []}
            if plan.log_requests
            else None
        )

    def measured(self, at: float) -> bool:
        return at >= self.window_start

    def error(self, cls: str, message: str) -> None:
        r = self.result
        r.errors[cls] = r.errors.get(cls, 0) + 1
        r.error_examples.setdefault(cls, message[:300])

    def warm(self, sent: float, outcome: Response | BaseException) -> None:
        """A request sent before the window: only how long its answer took (one that outlasts the window is why
        a point measured nothing)."""
        if isinstance(outcome, Response):
            took = outcome.done - sent
            longest = self.result.warmup_longest_s
            self.result.warmup_longest_s = took if longest is None else max(longest, took)

    def finish(self, index: int, due: float | None, sent: float, outcome: Response | BaseException) -> None:
        """Count one measured request's outcome."""
        r = self.result
        r.sent += 1
        ended = outcome.done if isinstance(outcome, Response) else perf_counter()
        r.last_end = ended if r.last_end is None else max(r.last_end, ended)
        cls, counted = self._outcome(index, due, sent, outcome)
        if self.log is not None:
            start = self.plan.start_at
            self.log["index"].append(index)
            self.log["intended_s"].append(math.nan if due is None else due - start)
            self.log["sent_s"].append(sent - start)
            self.log["end_s"].append(ended - start)
            self.log["outcome"].append(cls)
            self.log["tokens"].append(self.plan.tokens[index] if counted is None else counted)

    def _outcome(
        self, index: int, due: float | None, sent: float, outcome: Response | BaseException
    ) -> tuple[str, int | None]:
        """Count the outcome: `ok` or its error class, and the tokens the server counted (None: it did not say)."""
        r = self.result
        if isinstance(outcome, BaseException):
            cls = error_class(outcome)
            self.error(cls, f"{type(outcome).__name__}: {outcome}")
            return cls, None
        if outcome.status >= 400:
            cls = status_class(outcome.status, outcome.body)
            self.error(cls, f"HTTP {outcome.status}: {outcome.body[:200].decode('utf-8', 'replace')}")
            return cls, None
        if not self._valid(index, outcome):
            return "bad_response", None
        r.ok += 1
        r.texts_ok += self.plan.inputs[index]
        v = self.values
        v["service"].append(int((outcome.done - sent) * 1e6))
        if due is not None:
            v["scheduled"].append(int((outcome.done - due) * 1e6))
            v["dispatch_delay"].append(int((sent - due) * 1e6))
        counted = None
        for name, value in outcome.headers:
            quantity = SERVER_HEADERS.get(name)
            try:
                if quantity is not None:
                    v[quantity].append(int(float(value) * 1000))
                elif name == TOKENS_HEADER:
                    counted = int(float(value))
            except ValueError:
                pass
        if counted is None:
            r.tokens_estimated += self.plan.tokens[index]
        else:
            r.tokens_counted += counted
        return "ok", counted

    def _valid(self, index: int, response: Response) -> bool:
        """Parse a sample of the answers in full with the kind's wire: a 200 with a wrong body is an error."""
        if self.plan.wire is None:
            return True
        started = perf_counter()
        first = self.result.validated < VALIDATE_FIRST
        within_budget = self.parse_s <= VALIDATE_BUDGET * (started - self.plan.start_at)
        if not (first or within_budget or "bad_response" in self.result.errors):
            return True
        self.result.validated += 1
        try:
            self.plan.wire.parse(loads(response.body), self.plan.inputs[index])
        except ValueError as exc:  # broken or too deeply nested JSON, a wrong shape (WireShapeError)
            # From the first bad body on, every answer is parsed: the counts are then exact, not sampled.
            self.error(
                "bad_response", f"HTTP {response.status} but {exc}: {response.body[:160].decode('utf-8', 'replace')}"
            )
            return False
        finally:
            if not first:  # the first ones, always parsed, pay one-time costs (numpy's first calls): not the budget's
                self.parse_s += perf_counter() - started
        return True

    def close(self) -> ShareResult:
        r = self.result
        r.histograms = {
            name: histograms.encode(histograms.from_values(values)) if values else None
            for name, values in self.values.items()
        }
        r.loop_lag = histograms.encode(histograms.from_values(self.lag)) if self.lag else None
        if self.log is not None:
            r.request_log = {k: v.tolist() if isinstance(v, array) else v for k, v in self.log.items()}
            r.request_log["texts"] = [self.plan.inputs[i] for i in r.request_log["index"]]
        return r


def status_class(status: int, body: bytes = b"") -> str:
    """Error classes counted per point: TEI's refusals by their meaning, the rest by family."""
    if status in (413, 422):
        return "too_large"  # TEI: batch over max_client_batch_size (422 since 1.9, 413 before), input too long, payload
    if status in (429, 424):
        return str(status)  # 429 no permit free (overloaded); 424 backend failure
    return "4xx" if status < 500 else "5xx"


def error_class(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if isinstance(exc, (ConnectionLost, ConnectionError, OSError)):
        return "connection"
    if isinstance(exc, ProtocolViolation):
        return "bad_response"
    return "client"  # an exception of the in-process endpoint


def run_share(plan: SharePlan) -> ShareResult:
    """Run this worker's share of one point on a fresh event loop (uvloop when installed)."""
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio still measures correctly
        runner = asyncio.Runner()
    with runner:
        return runner.run(_run(plan))


async def _run(plan: SharePlan) -> ShareResult:
    recorder = _Recorder(plan)
    sender = _sender(plan)
    ticker = asyncio.get_running_loop().create_task(_probe(recorder))
    await _sleep_until(plan.start_at)
    cpu0, wall0 = time.process_time(), perf_counter()  # the client's CPU from the first intended send on
    try:
        if plan.mode == Loop.CLOSED:
            await _closed(plan, sender, recorder)
        else:
            await _open(plan, sender, recorder)
    finally:
        ticker.cancel()
        sender.close()
    recorder.result.cpu_s = time.process_time() - cpu0
    recorder.result.wall_s = perf_counter() - wall0
    recorder.result.first_measured = recorder.window_start
    return recorder.close()


async def _probe(recorder: _Recorder) -> None:
    """How late the loop wakes a 10 ms timer: a busy client shows here before anywhere else."""
    while True:
        due = perf_counter() + TICK_S
        await asyncio.sleep(TICK_S)
        if recorder.measured(due):
            recorder.lag.append(int(max(0.0, perf_counter() - due) * 1e6))


async def _sleep_until(when: float) -> float:
    """Sleep on a timer until `when`; libuv's millisecond timers may wake up to 1 ms early, and the rest
    is yielded (`sleep(0)` keeps the loop polling sockets). No longer busy-wait: on a shared machine a
    spinning client loses its time slices to the scheduler and dispatches later, not sooner (docs/load.md).
    Returns the CPU seconds the yielding took: waiting, which is not the client's work per request."""
    left = when - perf_counter()
    if left > 0:
        await asyncio.sleep(left)
    if perf_counter() >= when:
        return 0.0
    cpu = time.process_time()  # read only when there is time to wait anyway
    while perf_counter() < when:
        await asyncio.sleep(0)
    return time.process_time() - cpu


class _Sender(Protocol):
    async def send(self, index: int) -> tuple[float, Response]: ...

    def close(self) -> None: ...


class _Http:
    def __init__(self, plan: SharePlan, target: Target):
        self.plan = plan
        self.pool = Pool(target, plan.timeout_s)

    async def send(self, index: int) -> tuple[float, Response]:
        return await self.pool.request(self.plan.requests[index])

    def close(self) -> None:
        self.pool.close()


class _InProcess:
    """An in-process endpoint (reference kinds): each request is one call on a thread of its own pool."""

    def __init__(self, plan: SharePlan, call: Callable[[int], Any]):
        from concurrent.futures import ThreadPoolExecutor

        self.plan, self.call = plan, call
        self.loop = asyncio.get_running_loop()
        self.threads = ThreadPoolExecutor(max_workers=max(1, plan.max_inflight or plan.users or 1))

    async def send(self, index: int) -> tuple[float, Response]:
        def call() -> Response:
            self.call(index)
            return Response(200, [], b"", perf_counter())

        sent = perf_counter()
        return sent, await asyncio.wait_for(self.loop.run_in_executor(self.threads, call), self.plan.timeout_s)

    def close(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)


def _sender(plan: SharePlan) -> _Sender:
    if plan.call is not None:
        return _InProcess(plan, plan.call)
    if plan.target is None:
        raise ValueError(f"share of worker {plan.worker}: neither a target nor an in-process call")
    return _Http(plan, plan.target)


async def _closed(plan: SharePlan, sender: _Sender, recorder: _Recorder) -> None:
    stop_at = None if plan.duration_s is None else recorder.window_start + plan.duration_s
    state = {"next": 0, "measured": 0}
    n = len(plan.inputs)

    async def user(u: int) -> None:
        index = u
        while True:
            now = perf_counter()
            if (stop_at is not None and now >= stop_at) or _stopped_at(now):
                return
            measured = recorder.measured(now)
            if measured and plan.count is not None:
                if state["measured"] >= plan.count:
                    return
                state["measured"] += 1
            index = (index + plan.users) % n
            outcome: Response | Exception
            try:
                sent, outcome = await sender.send(index)
            except Exception as exc:
                sent, outcome = now, exc
            recorder.result.handled += 1
            if measured:
                recorder.finish(index, None, sent, outcome)
            else:
                recorder.warm(sent, outcome)
            if isinstance(outcome, (ConnectionLost, OSError)):
                await asyncio.sleep(0.05)  # a refused connection answers at once: do not spin on it

    await asyncio.gather(*(user(u) for u in range(max(1, plan.users))))


def _floats(offsets: np.ndarray, block: int = 65_536) -> Iterator[float]:
    """The offsets as plain floats (faster to step through than numpy scalars), a block at a time: a schedule
    of millions never exists as a list of Python floats (32 bytes each instead of 8)."""
    for start in range(0, len(offsets), block):
        yield from offsets[start : start + block].tolist()


def _slot_deadline(plan: SharePlan, recorder: _Recorder) -> float | None:
    """A due request waits for a slot as long as an answer may take (--timeout) past the point's end (its planned
    end, or the pool's stop time where that came first); what is still waiting then was never sent: `unsent`.
    A burst, or a point of N requests, waits for its slots."""
    if plan.duration_s is None or plan.mode == Loop.BURST:
        return None
    end = recorder.window_start + plan.duration_s
    return min(end, _pool_stop.get() if _pool_stop is not None else end) + plan.timeout_s


async def _until_due(due: float, recorder: _Recorder) -> bool:
    """Wait for a request's intended send time; False when the pool's stop time comes first (that request and
    every later one are never scheduled). A stoppable share wakes every STOP_POLL_S to look."""
    while not _stopped_at(due):
        now = perf_counter()
        if due <= now:  # behind schedule: still let answers in (and their connections back to the pool) between sends
            await asyncio.sleep(0)
            return True
        wake = due if _pool_stop is None else min(due, now + STOP_POLL_S)
        recorder.result.idle_cpu_s += await _sleep_until(wake)
        if wake == due and not _stopped_at(due):  # stopped while asleep: the window ended before it was due
            return True
    return False


async def _open(plan: SharePlan, sender: _Sender, recorder: _Recorder) -> None:
    """Open loop and burst: dispatch at intended times; a semaphore caps what is in flight."""
    cap = plan.max_inflight if plan.mode == Loop.OPEN else (plan.users or None)
    slots = asyncio.Semaphore(cap) if cap else None
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()
    n = len(plan.inputs)

    async def one(index: int, due: float) -> None:
        try:
            outcome: Response | Exception
            try:
                sent, outcome = await sender.send(index % n)
            except Exception as exc:
                sent, outcome = perf_counter(), exc
            recorder.result.handled += 1
            if recorder.measured(due):
                recorder.finish(index % n, due, sent, outcome)
            else:
                recorder.warm(sent, outcome)
        finally:
            if slots is not None:
                slots.release()

    offsets = np.asarray(plan.offsets, dtype=float)
    for index, offset in enumerate(_floats(offsets)):
        due = plan.start_at + offset
        if not await _until_due(due, recorder):
            break
        if slots is not None and slots.locked():
            deadline = _slot_deadline(plan, recorder)
            if deadline is None:
                await slots.acquire()
            else:
                try:
                    await asyncio.wait_for(slots.acquire(), max(0.0, deadline - perf_counter()))
                except TimeoutError:  # what was due in the window and still waits: never sent
                    due_rest = plan.start_at + offsets[index:]
                    end = _pool_stop.get() if _pool_stop is not None else math.inf
                    recorder.result.unsent += int(
                        np.count_nonzero((due_rest >= recorder.window_start) & (due_rest < end))
                    )
                    break
        elif slots is not None:
            await slots.acquire()
        task = loop.create_task(one(index, due))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.gather(*pending)
    if plan.mode == Loop.OPEN and plan.duration_s is not None:
        # What the schedule set in the window, counted now: the pool's stop time, known only now, may have cut it.
        # In offsets from the start, as the schedule was cut (`open_schedule`): no rounding moves one across the end.
        end = plan.warmup_s + plan.duration_s
        if _pool_stop is not None:
            end = min(end, _pool_stop.get() - plan.start_at)
        in_window = (offsets >= plan.warmup_s) & (offsets < end)
        recorder.result.scheduled = int(np.count_nonzero(in_window))
        recorder.result.scheduled_s = max(0.0, end - plan.warmup_s)
