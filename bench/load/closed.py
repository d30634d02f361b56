"""The closed loop, driven from callbacks: each virtual user writes its next request from the callback that
delivered its previous answer (`Connection.send_then`), with no Future, task or coroutine resumed a request.

Profiled first (benchmarks/client_cost.py, docs/load.md): with a coroutine a user, the asyncio machinery between an
answer's bytes and the next write (the Future's result, the task's wake-up on the next loop pass, the frames it
resumed) was most of the interpreter's share of the client's CPU per request. A request with no idle connection
(the first ones, after the server closed one, after a failure) takes the general path, `Pool.request` in a task,
whose outcome comes back to the same callback: one loop, whatever the sender (`Sender.start`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable
from time import perf_counter
from typing import Protocol

from bench.load.client import ConnectionLost, Response, Then
from bench.load.recorder import Recorder
from bench.load.share import SharePlan
from bench.load.stop_time import stopped_at

REFUSED_PAUSE_S = 0.05  # a refused connection answers at once: a user waits this long before trying again


class Sender(Protocol):
    def send(self, index: int) -> Awaitable[tuple[float, Response]]: ...

    def start(self, index: int, then: Then) -> None:
        """Send request `index`; `then(sent, outcome)` once its outcome is in (called from the event loop)."""

    def close(self) -> None: ...


Sent = asyncio.Task[tuple[float, Response]]


def then_when_done(tasks: set[Sent], task: Sent, then: Then) -> None:
    """The general path's outcome handed to a closed-loop callback: `then(sent, response)`, or `then(nan, exc)`
    (the user keeps when it began). A task cancelled by the share's end calls nothing."""
    tasks.add(task)

    def done(task: Sent) -> None:
        tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            then(*task.result())
        elif isinstance(exc, Exception):
            then(math.nan, exc)

    task.add_done_callback(done)


class _Run:
    """What the users share: the stop conditions, the recorder, and the future the share awaits."""

    def __init__(self, plan: SharePlan, sender: Sender, recorder: Recorder):
        self.loop = asyncio.get_running_loop()
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.users, self.count, self.n = max(1, plan.users), plan.count, len(plan.inputs)
        self.window_start = recorder.window_start
        self.end = math.inf if plan.duration_s is None else recorder.window_start + plan.duration_s
        self.counted = 0  # measured requests sent so far (a point of N requests)
        self.running = self.users
        self.start, self.result = sender.start, recorder.result
        self.finish, self.warm = recorder.finish, recorder.warm

    def ended(self) -> None:
        self.running -= 1
        if self.running == 0 and not self.finished.done():
            self.finished.set_result(None)

    def failed(self, exc: BaseException) -> None:
        """A bug in a callback: the share fails with it (as a coroutine user's exception would), never hangs."""
        if not self.finished.done():
            self.finished.set_exception(exc)


class _User:
    """One virtual user: its next request written from its previous answer's callback."""

    __slots__ = ("answered_then", "began", "index", "measured", "run")

    def __init__(self, run: _Run, u: int):
        self.run, self.index, self.measured, self.began = run, u, False, 0.0
        self.answered_then: Then = self.answered  # bound once, not a new bound method a request

    def next(self) -> None:
        run = self.run
        try:
            now = perf_counter()
            if now >= run.end or stopped_at(now) or run.finished.done():
                run.ended()
                return
            measured = now >= run.window_start
            if measured and run.count is not None:
                if run.counted >= run.count:
                    run.ended()
                    return
                run.counted += 1
            self.index = (self.index + run.users) % run.n
            self.measured, self.began = measured, now
            run.start(self.index, self.answered_then)
        except BaseException as exc:
            run.failed(exc)

    def answered(self, sent: float, outcome: Response | Exception) -> None:
        run = self.run
        try:
            run.result.handled += 1
            if outcome.__class__ is not Response:
                sent = self.began  # as a coroutine user counted a failure: from when it began
            if self.measured:
                run.finish(self.index, None, sent, outcome)
            else:
                run.warm(sent, outcome)
        except BaseException as exc:
            run.failed(exc)
            return
        if outcome.__class__ is not Response and isinstance(outcome, (ConnectionLost, OSError)):
            run.loop.call_later(REFUSED_PAUSE_S, self.next)
        else:
            self.next()


async def closed_loop(plan: SharePlan, sender: Sender, recorder: Recorder) -> None:
    """`plan.users` users, each sending its next request when the previous answer is in, until the window ends
    (its duration, the pool's stop time) or the point's N measured requests are sent; returns when every user has
    its last answer."""
    run = _Run(plan, sender, recorder)
    for u in range(run.users):
        _User(run, u).next()
    await run.finished
