"""`load --trace FILE`: a recorded trace (bench/endpoints/meter_trace.py) replayed open-loop through load's own
worker machinery — one SharePlan a route, its offsets the recorded arrivals divided by `--speed`, its requests the
recorded calls (texts per call as recorded, synthetic texts of the recorded lengths), measured as load measures
(scheduled latency from the intended send time; `behind` when a send left past its time).

    replays = replay_trace(routes, calls, TraceSettings(speed=2.0), workload)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, replace
from time import perf_counter

import numpy as np

from bench.core import values as v
from bench.endpoints.meter_trace import CallKind, TraceCall, TraceUnit
from bench.load.client import encode_request, target_of
from bench.load.endpoint import InProcessCall, LoadEndpoint
from bench.load.pool import stop_pool, wait_plans
from bench.load.recorder import Outcome
from bench.load.share import SharePlan, ShareResult
from bench.load.shares import START_LEAD_S
from bench.load.stop_time import StopTime
from bench.load.worker import run_share
from bench.load.workload import Workload
from bench.results.schema import Loop, Op

BEHIND_S = 0.001  # a send that left more than this after its intended time was behind the schedule
NO_GAP_PERIOD_S = 1.0  # a pass of a trace with no gap between its calls (`trace_period`)
# --speed: from a thousandth (a 10 s trace over 3 h) to a million times the recorded pace; past either end the
# schedule's floats overflow or collapse onto one instant (1e-320 overflowed numpy and hung).
SPEED = v.Quantity("times the recorded pace", 1e-3, 1e6, why="a thousandth to a million times the recording's pace")
STOP_GRACE_S = 5.0  # past a request's timeout, for a stopped worker to return what it measured
COPIES = 3  # a call's texts, its encoded request, and the worker's copy of the request


@dataclass(frozen=True)
class TraceSettings:
    speed: float = 1.0  # 2.0: the trace's arrivals twice as fast
    loops: int = 1  # the trace played this many times, end to end
    timeout_s: float = 30.0
    #: sends intended later than this (s from the replay's start, every route on one clock) are not scheduled:
    #: `size --trace` cuts a long trace to what its --max-time budget holds; None: every loop whole
    window_s: float | None = None


@dataclass(frozen=True)
class RouteReplay:
    """What one route's replay measured, per call: intended / sent / end (s from the replay's start), outcome."""

    route: str
    endpoint: str
    recorded: tuple[TraceCall, ...]
    intended_s: tuple[float, ...]
    sent_s: tuple[float, ...]
    end_s: tuple[float, ...]
    outcomes: tuple[str, ...]
    texts: tuple[int, ...]
    loop_lag: str | None = None  # HDR of the replaying worker's event-loop lag (None: not measured)

    @property
    def latencies_s(self) -> np.ndarray:
        """Scheduled latency: from the intended send time to the answer's end."""
        latencies: np.ndarray = np.asarray(self.end_s) - np.asarray(self.intended_s)
        return latencies

    @property
    def answered(self) -> np.ndarray:
        """Per call, whether it was answered (its outcome `ok`), as a boolean mask over the calls."""
        return np.asarray([o == Outcome.OK for o in self.outcomes], dtype=bool)

    @property
    def behind(self) -> int:
        return int(np.count_nonzero(np.asarray(self.sent_s) - np.asarray(self.intended_s) > BEHIND_S))


def running_corpus(workload: Workload) -> tuple[list[str], str]:
    """The workload's texts as one running text: its words, and the words joined (what texts are cut from)."""
    words = " ".join(workload.texts).split()
    return words, " ".join(words)


def synthetic_texts(
    workload: Workload, call: TraceCall, corpus: tuple[list[str], str] | None = None
) -> tuple[str | None, list[str]]:
    """A call's query (rerank) and texts of its recorded lengths, cut from the running corpus (`running_corpus`,
    given once for a whole trace: joining a 1.4 MB corpus a call took 60 s for 300 calls at load 16): characters
    exactly (`chars`), or words for `tokens` (as `--lengths` cuts without a tokenizer)."""
    words, text = corpus or running_corpus(workload)
    texts = []
    for position, length in enumerate(call.lengths):
        texts.append(_cut(words, text, position * 97, length, call.unit))
    query = None
    if call.kind == CallKind.RERANK:
        query = _cut(words, text, 13, call.query or 1, call.unit)
    return query, texts


def _cut(words: list[str], corpus: str, start: int, length: int, unit: TraceUnit) -> str:
    if unit == TraceUnit.CHARS:
        size = max(1, len(corpus))
        offset = start % size
        if offset + length <= len(corpus):  # the common case: no copy of the corpus
            return corpus[offset : offset + length]
        return (corpus * (2 + length // size))[offset : offset + length]
    return " ".join(words[(start + i) % len(words)] for i in range(length))


def trace_period(calls: list[TraceCall]) -> float:
    """One pass of the trace at speed 1, as `--loop` plays it end to end: its span plus its mean gap (the gap
    from its last call to the next pass's first). A trace with no gap — one call, or calls that share one `at` —
    has no pace of its own to repeat: it passes once a NO_GAP_PERIOD_S (a 3 s loop of one call is 3 sends, not
    3,000, and a burst is not scheduled 10⁴ times at t = 0)."""
    span = calls[-1].at - calls[0].at
    period = span + (span / (len(calls) - 1) if len(calls) > 1 else 0.0)
    return period if period > 0 else NO_GAP_PERIOD_S


def loops_for(calls: list[TraceCall], speed: float, seconds: float) -> int:
    """How many passes `--loop --duration` plays: enough to fill `seconds` at `speed`."""
    return max(1, math.ceil(seconds * speed / trace_period(calls)))


def schedule_s(calls: list[TraceCall], loops: int) -> np.ndarray:
    """Every call's intended offset at speed 1, the trace looped `loops` times end to end."""
    arrivals = np.asarray([c.at for c in calls], dtype=float) - calls[0].at
    return np.concatenate([arrivals + loop * trace_period(calls) for loop in range(loops)])


def check_replay(calls: list[TraceCall], settings: TraceSettings, workload: Workload) -> None:
    """A replay that fits, refused before anything is sent or written (one line, exit 2): `--speed` in range, the
    schedule within a week and MAX_SCHEDULED sends, and its requests within load's memory bound
    (values.REQUEST_MEMORY, as `load` checks its points: a 48 KB trace of long texts was 3.7 GB of requests)."""
    speed = v.number("--speed", settings.speed, SPEED)
    lasts = float(schedule_s(calls, 1)[-1]) * settings.loops / speed
    v.at_most(f"--speed {speed:g}: the trace's schedule", lasts, v.MAX_TIME_SECONDS, "give a larger --speed")
    v.at_most(
        f"the trace's {len(calls):,} calls × {settings.loops:,} loops",
        len(calls) * settings.loops,
        v.SCHEDULED_REQUESTS,
        "give a shorter --duration or trace",
    )
    words = " ".join(workload.texts[:1000]).split()
    per_token = (sum(map(len, words)) / max(1, len(words))) + 1  # a word and its space, as _cut joins them
    built = sum((sum(c.lengths) + (c.query or 0)) * (per_token if c.unit == TraceUnit.TOKENS else 1) for c in calls)
    v.at_most(
        f"load --trace: the trace's texts ({built:,.0f} characters) as texts, requests and the worker's copy",
        built * COPIES,
        v.REQUEST_MEMORY,
        "replay a shorter trace",
    )


def replay_plan(
    endpoint: LoadEndpoint, calls: list[TraceCall], settings: TraceSettings, workload: Workload
) -> SharePlan:
    """One route's share: every call at its recorded offset / speed (loops end to end), start_at set later; with a
    window, the sends past it dropped first, and only the calls sent are built (linear in what is sent)."""
    offsets = schedule_s(calls, settings.loops) / settings.speed
    if settings.window_s is not None:
        offsets = offsets[offsets <= max(settings.window_s, float(offsets[0]))]
    sent = calls[: min(len(calls), len(offsets))]  # send i is call i % len(sent): a cut pass builds only its own
    corpus = running_corpus(workload)
    payloads = [synthetic_texts(workload, call, corpus) for call in sent]
    plan = SharePlan(
        worker=0,
        mode=Loop.OPEN,
        target=None,
        requests=[],
        inputs=[len(texts) for _, texts in payloads],
        tokens=[sum(call.lengths) for call in sent],
        start_at=0.0,
        warmup_s=0.0,
        duration_s=float(offsets[-1]) + 1e-6,
        offsets=offsets,
        timeout_s=settings.timeout_s,
        wire=endpoint.wire,
        log_requests=True,
    )
    op = Op.RERANK if calls[0].kind == CallKind.RERANK else Op.EMBED
    if endpoint.in_process:
        plan.call = InProcessCall(endpoint.spec, op, payloads)
    else:
        wired = [endpoint.request(payload) for payload in payloads]
        plan.target = target = target_of(wired[0].url)
        plan.requests = [encode_request(target, w.method, w.body(), endpoint.headers) for w in wired]
        plan.answer_cap = max((w.cap for w in wired), key=lambda cap: cap.size)
    return plan


def replay_trace(
    routes: dict[str, LoadEndpoint],
    calls: list[TraceCall],
    settings: TraceSettings,
    workload: Workload,
    executor_of: Callable[[int], Executor],
    tick: Callable[[], None] = lambda: None,
    owned: bool = True,
    stop: StopTime | None = None,
) -> list[RouteReplay]:
    """Every mapped route's calls replayed at once (a worker a route), all on one clock; `tick` is called while the
    replay runs (every 0.2 s): what it raises stops the workers and goes on. `owned`: the executor is the replay's
    own, shut down once idle; False: the caller's, kept for its next replay (stopped only when this one fails).
    `stop`: the executor's workers' stop time (bench/load/stop_time.py): a signal then ends the sends and raises
    StoppedReplay with what was measured; without, a signal stops the workers and goes on."""
    by_route = {route: [c for c in calls if c.route == route] for route in routes}
    by_route = {route: mine for route, mine in by_route.items() if mine}
    first = min(mine[0].at for mine in by_route.values())
    plans = [
        replay_plan(routes[route], mine, _route_window(settings, (mine[0].at - first) / settings.speed), workload)
        for route, mine in by_route.items()
    ]
    executor = executor_of(len(plans))  # started before the clock: spawning workers takes seconds on a busy machine
    start_at = perf_counter() + START_LEAD_S
    for worker, (plan, mine) in enumerate(zip(plans, by_route.values(), strict=True)):
        plan.start_at = start_at + (mine[0].at - first) / settings.speed
        plan.worker = worker
    futures = [executor.submit(run_share, plan) for plan in plans]
    try:
        results = wait_plans(futures, tick)
    except KeyboardInterrupt as signal:
        if stop is None:
            stop_pool(executor)
            raise
        results = _stopped(executor, futures, stop, settings.timeout_s)  # the sends so far, measured
        raise StoppedReplay(signal, _replays(routes, by_route, plans, results, start_at)) from signal
    except BaseException:
        stop_pool(executor)
        raise
    # Idle workers exit on their own: terminating them (stop_pool) leaves the executor's wake-up pipe closed, and
    # `size --trace`'s pool a probe then printed "Exception ignored ... Bad file descriptor" at the process's exit.
    if owned:
        executor.shutdown(wait=True)
    return _replays(routes, by_route, plans, results, start_at)


class StoppedReplay(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a replay that kept a stop time: `replays` holds what was sent before it (each
    worker stopped sending, awaited its calls in flight), `signal` the stop to raise once they are written."""

    def __init__(self, signal: KeyboardInterrupt, replays: list[RouteReplay]):
        super().__init__(*signal.args)
        self.signal, self.replays = signal, replays


def _stopped(
    executor: Executor, futures: list[Future[ShareResult]], stop: StopTime, timeout_s: float
) -> list[ShareResult]:
    """The workers' results once the stop time is set to now: each ends its window, awaits what it sent (at most a
    request's timeout), and returns what it measured. A second signal meanwhile stops the workers at once."""
    stop.set(perf_counter())
    try:
        wait(futures, timeout=timeout_s + STOP_GRACE_S)
        return [f.result(timeout=0) for f in futures]
    except BaseException:
        stop_pool(executor)
        raise


def _replays(
    routes: dict[str, LoadEndpoint],
    by_route: dict[str, list[TraceCall]],
    plans: list[SharePlan],
    results: list[ShareResult],
    start_at: float,
) -> list[RouteReplay]:
    return [
        _route_replay(route, routes[route].spec.name, mine, result, start_at - plan.start_at)
        for (route, mine), plan, result in zip(by_route.items(), plans, results, strict=True)
    ]


def _route_window(settings: TraceSettings, starts_s: float) -> TraceSettings:
    """A route's settings, its window counted from its own first send (`starts_s` after the replay's)."""
    if settings.window_s is None:
        return settings
    return replace(settings, window_s=settings.window_s - starts_s)


def _route_replay(
    route: str, endpoint: str, recorded: list[TraceCall], result: ShareResult, shift: float
) -> RouteReplay:
    log = result.request_log or {}
    order = np.argsort(np.asarray(log.get("intended_s", []), dtype=float), kind="stable")

    def column(name: str) -> tuple[float, ...]:
        values = np.asarray(log.get(name, []), dtype=float)[order] - shift
        return tuple(values.tolist())

    return RouteReplay(
        route,
        endpoint,
        tuple(recorded),
        column("intended_s"),
        column("sent_s"),
        column("end_s"),
        tuple(str(log["outcome"][i]) for i in order),
        tuple(int(log["texts"][i]) for i in order),
        result.loop_lag,
    )
