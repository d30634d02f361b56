"""The meter's books: each route's running totals (`Usage`), calls in flight, and with `log_calls` every call."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import asdict, replace
from typing import Any

from bench.endpoints.meter_calls import CallRecord, StatusClass, body_digest
from bench.endpoints.meter_trace import CallKind, TraceCall, TraceWriter, call_shape
from bench.endpoints.meter_usage import Usage, checked_usage

_STATUS_COUNTERS = {
    StatusClass.TOO_MANY_REQUESTS: "status_429",
    StatusClass.TOO_LARGE: "status_413",
    StatusClass.UNPROCESSABLE: "status_422",
    StatusClass.SERVER_ERROR: "status_5xx",
}
# Failed bodies remembered per route to tell a retry; beyond this many the oldest are forgotten.
_FAILED_BODIES_KEPT = 10_000


class MeterLedger:
    """Counts the calls of each route: `begin` when one starts, `record` when it ends; thread-safe."""

    def __init__(self, routes: list[str], log_calls: bool = False):
        """`log_calls`: keep every call's record and request in `calls` (an ingest's meter; a long-running
        meter keeps its totals only)."""
        self.usage = {route: Usage() for route in routes}
        self.instance = uuid.uuid4().hex  # this run of the meter: its counters start at 0
        self.log_calls = log_calls
        self.in_flight = 0  # calls being forwarded now
        self.calls_total = 0  # calls forwarded so far
        self._last_end = time.perf_counter()
        self.calls: list[CallRecord] = []  # with log_calls: every forwarded call, in the order they ended
        self._failed_bodies: dict[str, dict[str, None]] = {route: {} for route in routes}
        self._route_in_flight = dict.fromkeys(routes, 0)
        self._busy_since = dict.fromkeys(routes, 0.0)  # when the route's current busy stretch began
        self._lock = threading.Lock()
        self.trace: TraceWriter | None = None  # `ragbench meter --record`: every call's shape, never its texts

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self._lock:
            return {route: asdict(u) for route, u in self.usage.items()}

    def wait_idle(self, quiet_s: float = 0.5, timeout_s: float = 30.0) -> bool:
        """Wait until no call has been in flight for `quiet_s` (calls an app left running after it gave up on a
        document still belong to what it did), at most `timeout_s`; whether it got there."""
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            with self._lock:
                idle = self.in_flight == 0 and time.perf_counter() - self._last_end >= quiet_s
            if idle:
                return True
            time.sleep(0.05)
        return False

    def calls_since(self, index: int) -> list[CallRecord]:
        """The calls that ended after the first `index` ones (`len(meter.calls)` taken before)."""
        with self._lock:
            return self.calls[index:]

    def begin(self, route: str) -> float:
        """A call of `route` starts now (its start time): `record` ends it."""
        with self._lock:
            now = time.perf_counter()
            self.in_flight += 1
            if self._route_in_flight[route] == 0:
                self._busy_since[route] = now
            self._route_in_flight[route] += 1
            if self.trace is not None:
                self.trace.begin(now)
            return now

    def record(self, route: str, call: CallRecord, body: bytes, usage: Any) -> None:
        """A call `begin` started has ended: count it."""
        with self._lock:
            total = self.usage[route]
            failed = self._failed_bodies[route]
            digest = body_digest(body) if body else ""
            retry = bool(digest) and digest in failed
            found = checked_usage(usage)
            call = replace(
                call,
                retry=retry,
                prompt_tokens=(found or {}).get("prompt_tokens", 0),
                completion_tokens=(found or {}).get("completion_tokens", 0),
            )
            if self.log_calls:
                self.calls.append(call)
            self._end_call(route, total)
            total.calls += 1
            total.seconds += call.seconds
            total.texts += call.texts or 0
            total.retries += retry
            total.upstream_seconds += call.upstream_s or 0.0
            counter = _STATUS_COUNTERS.get(call.status_class)
            if counter:
                setattr(total, counter, getattr(total, counter) + 1)
            if call.status is None or call.status >= 400:
                total.errors += 1
                if digest:
                    failed[digest] = None
                    if len(failed) > _FAILED_BODIES_KEPT:
                        del failed[next(iter(failed))]
            _add_tokens(total, found)
        if (trace := self.trace) is not None:
            trace.end_shaped(call.started_s, lambda: _trace_call(trace, call, body, found))

    def _end_call(self, route: str, total: Usage) -> None:
        """One call fewer in flight (the lock held): a route left with none ends its busy stretch."""
        self.in_flight -= 1
        self.calls_total += 1
        self._last_end = time.perf_counter()
        self._route_in_flight[route] -= 1
        if self._route_in_flight[route] == 0:
            total.busy_seconds += self._last_end - self._busy_since[route]


def _add_tokens(total: Usage, found: dict[str, int] | None) -> None:
    if found is None:
        total.calls_without_usage += 1
        return
    prompt = found.get("prompt_tokens", 0)
    completion = found.get("completion_tokens", 0)
    total.prompt_tokens += prompt
    total.completion_tokens += completion
    total.total_tokens += found.get("total_tokens", prompt + completion)


def _trace_call(trace: TraceWriter, call: CallRecord, body: bytes, found: dict[str, int] | None) -> TraceCall | None:
    """What a trace keeps of a call: its shape (lengths in characters, or the trace's tokenizer's tokens), never
    its texts. None for a call with no body: no model call but a client's probe (`load`'s own GET /info preflight
    through the meter), not the traffic the trace records."""
    if not body:
        return None
    shape = call_shape(body, trace.measure)
    kind, lengths, query = shape if shape is not None else (CallKind.LLM, (), None)
    return TraceCall(
        at=max(0.0, call.started_s - trace.origin),
        route=call.route,
        kind=kind,
        lengths=lengths,
        unit=trace.unit,
        tokens=(found or {}).get("prompt_tokens", (found or {}).get("total_tokens")),
        query=query,
        status=call.status,
        latency=call.seconds,
        hash=trace.digest(body),
    )
