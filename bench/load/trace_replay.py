"""`load --trace FILE`: a recorded trace (bench/endpoints/meter_trace.py) replayed open-loop through load's own
worker machinery — one SharePlan a route, its offsets the recorded arrivals divided by `--speed`, its requests the
recorded calls (texts per call as recorded, synthetic texts of the recorded lengths), measured as load measures
(scheduled latency from the intended send time; `behind` when a send left past its time).

    replays = replay_trace(routes, calls, TraceSettings(speed=2.0), workload)
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from bench.endpoints.meter_trace import CallKind, TraceCall, TraceUnit
from bench.load.client import encode_request, target_of
from bench.load.endpoint import InProcessCall, LoadEndpoint
from bench.load.pool import run_plans, stop_pool
from bench.load.share import SharePlan, ShareResult
from bench.load.shares import START_LEAD_S
from bench.load.workload import Workload
from bench.results.schema import Loop, Op

BEHIND_S = 0.001  # a send that left more than this after its intended time was behind the schedule


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


def replay_plan(
    endpoint: LoadEndpoint, calls: list[TraceCall], settings: TraceSettings, workload: Workload
) -> SharePlan:
    """One route's share: every call at its recorded offset / speed (loops end to end), start_at set later."""
    corpus = running_corpus(workload)
    payloads = [synthetic_texts(workload, call, corpus) for call in calls]
    arrivals = np.asarray([call.at for call in calls]) - calls[0].at
    period = float(arrivals[-1]) + (float(np.mean(np.diff(arrivals))) if len(arrivals) > 1 else 1.0)
    offsets = np.concatenate([arrivals + loop * period for loop in range(settings.loops)]) / settings.speed
    plan = SharePlan(
        worker=0,
        mode=Loop.OPEN,
        target=None,
        requests=[],
        inputs=[len(texts) for _, texts in payloads],
        tokens=[sum(call.lengths) for call in calls],
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
) -> list[RouteReplay]:
    """Every mapped route's calls replayed at once (a worker a route), all on one clock; `tick` is called while the
    replay runs (every 0.2 s): what it raises stops the workers and goes on. `owned`: the executor is the replay's
    own, shut down once idle; False: the caller's, kept for its next replay (stopped only when this one fails)."""
    by_route = {route: [c for c in calls if c.route == route] for route in routes}
    by_route = {route: mine for route, mine in by_route.items() if mine}
    plans = [replay_plan(routes[route], mine, settings, workload) for route, mine in by_route.items()]
    first = min(mine[0].at for mine in by_route.values())
    if settings.window_s is not None:
        for plan, mine in zip(plans, by_route.values(), strict=True):
            _cut_window(plan, settings.window_s - (mine[0].at - first) / settings.speed)
    executor = executor_of(len(plans))  # started before the clock: spawning workers takes seconds on a busy machine
    start_at = perf_counter() + START_LEAD_S
    for worker, (plan, mine) in enumerate(zip(plans, by_route.values(), strict=True)):
        plan.start_at = start_at + (mine[0].at - first) / settings.speed
        plan.worker = worker
    try:
        results = run_plans(executor, plans, tick)
    except BaseException:
        stop_pool(executor)
        raise
    # Idle workers exit on their own: terminating them (stop_pool) leaves the executor's wake-up pipe closed, and
    # `size --trace`'s pool a probe then printed "Exception ignored ... Bad file descriptor" at the process's exit.
    if owned:
        executor.shutdown(wait=True)
    return [
        _route_replay(route, routes[route].spec.name, mine, result, start_at - plan.start_at)
        for (route, mine), plan, result in zip(by_route.items(), plans, results, strict=True)
    ]


def _cut_window(plan: SharePlan, window_s: float) -> None:
    """The plan's sends intended after `window_s` (from its own first send) dropped; its first send always kept."""
    offsets = np.asarray(plan.offsets, dtype=float)
    kept = offsets[offsets <= max(window_s, float(offsets[0]))]
    plan.offsets = kept
    plan.duration_s = float(kept[-1]) + 1e-6


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
