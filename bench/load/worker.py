"""One load worker's loops: its share of one sweep point on one event loop, sent as the plan says.

    run_share(plan: SharePlan) -> ShareResult

is a plain function of serialisable values: the pool calls it in worker processes (`--workers`), and any
other executor (a Ray actor) can call it the same way and merge the results with `bench.load.merge.merge_shares`.

Three loops, one per `SharePlan.mode`:
- `closed`: `users` virtual users, each sending its next request when the previous answer is in;
- `open`: requests sent at the plan's intended offsets whatever the server does; with
  `max_inflight`, a due request waits in the client for a slot (its wait counts in `scheduled`)
  and those still waiting a timeout after the point's end are `unsent`;
- `burst`: every request due at once, at most `users` in flight (0: no cap), until drained.

What is measured and how it is counted: `bench.load.recorder`. The pool's driver may end the measured
windows early: `bench.load.stop_time`.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from time import perf_counter
from typing import Any

import numpy as np
import uvloop  # a dependency; imported with the worker (the pool's start), not in its first share

from bench.load.client import Pool, Response, Target, Then
from bench.load.closed import Sender, Sent, closed_loop, then_when_done
from bench.load.recorder import Recorder
from bench.load.share import SharePlan, ShareResult
from bench.load.stop_time import pool_stop, stopped_at
from bench.results.schema import Loop

TICK_S = 0.01  # the loop-lag probe's period
STOP_POLL_S = 0.05  # a stoppable open loop waiting for its next send looks at the pool's stop time this often


def run_share(plan: SharePlan) -> ShareResult:
    """Run this worker's share of one point on a fresh uvloop event loop. What the worker holds
    already (its imports, what earlier shares left) is frozen out of the cyclic collector first: a full collection
    that walked it took 100-150 ms on the busy 2-core runner, a stall inside a measured window that emptied a
    server's queue (one round of 16 in every job, at the same round: the collector runs on allocation counts).
    Reference counting still frees what a share drops; only cyclic garbage older than the share is kept."""
    gc.freeze()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(_run(plan))


async def _run(plan: SharePlan) -> ShareResult:
    recorder = Recorder(plan)
    sender = _sender(plan)
    ticker = asyncio.get_running_loop().create_task(_probe(recorder))
    await _sleep_until(plan.start_at)
    cpu0, wall0 = time.process_time(), perf_counter()  # the client's CPU from the first intended send on
    try:
        if plan.mode == Loop.CLOSED:
            await closed_loop(plan, sender, recorder)
        else:
            await _open(plan, sender, recorder)
    finally:
        ticker.cancel()
        sender.close()
    recorder.result.cpu_s = time.process_time() - cpu0
    recorder.result.wall_s = perf_counter() - wall0
    recorder.result.first_measured = recorder.window_start
    return recorder.close()


async def _probe(recorder: Recorder) -> None:
    """How late the loop wakes a 10 ms timer: a busy client shows here before anywhere else."""
    while True:
        due = perf_counter() + TICK_S
        await asyncio.sleep(TICK_S)
        if recorder.measured(due):
            recorder.lag.append(int(max(0.0, perf_counter() - due) * 1e6))


async def _sleep_until(when: float) -> float:
    """Sleep on a timer until `when`; libuv's millisecond timers may wake up to 1 ms early, and the rest
    is yielded (`sleep(0)` keeps the loop polling sockets). Never a busy-wait: on a shared machine a
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


class _Http:
    def __init__(self, plan: SharePlan, target: Target):
        self.requests = plan.requests
        self.pool = Pool(target, plan.timeout_s, plan.answer_cap)
        self.loop = asyncio.get_running_loop()
        self.connecting: set[Sent] = set()

    def send(self, index: int) -> Awaitable[tuple[float, Response]]:
        """The pool's own coroutine, not one wrapping it: a frame fewer to create and resume a request."""
        return self.pool.request(self.requests[index])

    def start(self, index: int, then: Then) -> None:
        """On an idle connection from its callbacks; else the general path (it connects) in a task."""
        data = self.requests[index]
        if not self.pool.start(data, then):
            then_when_done(self.connecting, self.loop.create_task(self.pool.request(data)), then)

    def close(self) -> None:
        self.pool.close()


class _InProcess:
    """An in-process endpoint (reference kinds): each request is one call on a thread of its own pool."""

    def __init__(self, plan: SharePlan, call: Callable[[int], Any]):
        from concurrent.futures import ThreadPoolExecutor

        self.plan, self.call = plan, call
        self.loop = asyncio.get_running_loop()
        self.threads = ThreadPoolExecutor(max_workers=max(1, plan.max_inflight or plan.users or 1))
        self.calls: set[Sent] = set()

    async def send(self, index: int) -> tuple[float, Response]:
        def call() -> Response:
            self.call(index)
            return Response(200, [], b"", perf_counter())

        sent = perf_counter()
        return sent, await asyncio.wait_for(self.loop.run_in_executor(self.threads, call), self.plan.timeout_s)

    def start(self, index: int, then: Then) -> None:
        then_when_done(self.calls, self.loop.create_task(self.send(index)), then)

    def close(self) -> None:
        self.threads.shutdown(wait=False, cancel_futures=True)


def _sender(plan: SharePlan) -> Sender:
    if plan.call is not None:
        return _InProcess(plan, plan.call)
    if plan.target is None:
        raise ValueError(f"share of worker {plan.worker}: neither a target nor an in-process call")
    return _Http(plan, plan.target)


def _floats(offsets: np.ndarray, block: int = 65_536) -> Iterator[float]:
    """The offsets as plain floats (faster to step through than numpy scalars), a block at a time: a schedule
    of millions never exists as a list of Python floats (32 bytes each instead of 8)."""
    for start in range(0, len(offsets), block):
        yield from offsets[start : start + block].tolist()


def _slot_deadline(plan: SharePlan, recorder: Recorder) -> float | None:
    """A due request waits for a slot as long as an answer may take (--timeout) past the point's end (its planned
    end, or the pool's stop time where that came first); what is still waiting then was never sent: `unsent`.
    A burst, or a point of N requests, waits for its slots."""
    if plan.duration_s is None or plan.mode == Loop.BURST:
        return None
    end = recorder.window_start + plan.duration_s
    stop = pool_stop()
    return min(end, stop.get() if stop is not None else end) + plan.timeout_s


async def _until_due(due: float, recorder: Recorder) -> bool:
    """Wait for a request's intended send time; False when the pool's stop time comes first (that request and
    every later one are never scheduled). A stoppable share wakes every STOP_POLL_S to look."""
    while not stopped_at(due):
        now = perf_counter()
        if due <= now:  # behind schedule: still let answers in (and their connections back to the pool) between sends
            await asyncio.sleep(0)
            return True
        wake = due if pool_stop() is None else min(due, now + STOP_POLL_S)
        recorder.result.idle_cpu_s += await _sleep_until(wake)
        if wake == due and not stopped_at(due):  # stopped while asleep: the window ended before it was due
            return True
    return False


async def _open(plan: SharePlan, sender: Sender, recorder: Recorder) -> None:
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
        if slots is not None and not await _take_slot(slots, plan, recorder, offsets[index:]):
            break
        task = loop.create_task(one(index, due))
        pending.add(task)
        task.add_done_callback(pending.discard)
    if pending:
        await asyncio.gather(*pending)
    if plan.mode == Loop.OPEN and plan.duration_s is not None:
        _count_scheduled(plan, plan.duration_s, recorder, offsets)


async def _take_slot(slots: asyncio.Semaphore, plan: SharePlan, recorder: Recorder, rest: np.ndarray) -> bool:
    """A slot for the next request (at offset `rest[0]`, the ones after it following); False where none frees
    before the slot deadline, the requests of `rest` due in the window then counted as never sent."""
    deadline = _slot_deadline(plan, recorder) if slots.locked() else None
    if deadline is None:
        await slots.acquire()
        return True
    try:
        await asyncio.wait_for(slots.acquire(), max(0.0, deadline - perf_counter()))
    except TimeoutError:  # what was due in the window and still waits: never sent
        due_rest = plan.start_at + rest
        stop = pool_stop()
        end = stop.get() if stop is not None else math.inf
        recorder.result.unsent += int(np.count_nonzero((due_rest >= recorder.window_start) & (due_rest < end)))
        return False
    return True


def _count_scheduled(plan: SharePlan, duration_s: float, recorder: Recorder, offsets: np.ndarray) -> None:
    """What the open schedule set in the window, counted now: the pool's stop time, known only now, may have cut
    it. In offsets from the start, as the schedule was cut (`open_schedule`): no rounding moves one across the end."""
    end = plan.warmup_s + duration_s
    stop = pool_stop()
    if stop is not None:
        end = min(end, stop.get() - plan.start_at)
    in_window = (offsets >= plan.warmup_s) & (offsets < end)
    recorder.result.scheduled = int(np.count_nonzero(in_window))
    recorder.result.scheduled_s = max(0.0, end - plan.warmup_s)
