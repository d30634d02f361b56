"""One share's recorder: each request's outcome counted by class, raw timings folded into HDR histograms.

A request is *measured* when its intended time (open, burst) or its send time (closed) falls after the warm-up;
only measured requests enter histograms and counts. Latencies are histogrammed for successful answers only (a
quick 429 is not a fast answer); errors are counted per class (`ErrorClass`).
"""

from __future__ import annotations

import asyncio
import math
from array import array
from dataclasses import dataclass, field
from enum import StrEnum
from time import perf_counter
from typing import Any

from bench.core.http import loads
from bench.load import histograms
from bench.load.client import ConnectionLost, ProtocolViolation, Response
from bench.load.quantities import LatencyQuantity, ServerQuantity
from bench.load.share import SharePlan, ShareResult
from bench.load.stop_time import pool_stop

# Answer bodies are parsed in full with the kind's wire: the first few always, then as long as parsing has
# taken at most this share of the worker's time (small bodies: all of them; 32 x 1024 floats: a sample),
# and every one after a bad one.
VALIDATE_FIRST = 5
VALIDATE_BUDGET = 0.05
# TEI's per-request split, in milliseconds, from its response headers.
SERVER_HEADERS = {
    b"x-queue-time": ServerQuantity.QUEUE,
    b"x-tokenization-time": ServerQuantity.TOKENIZATION,
    b"x-inference-time": ServerQuantity.INFERENCE,
}
TOKENS_HEADER = b"x-compute-tokens"


class Outcome(StrEnum):
    """A measured request's outcome: `ok`, or the class its error is counted under in a point's `errors`."""

    OK = "ok"
    TOO_LARGE = "too_large"  # TEI: batch over max_client_batch_size (422 since TEI 1.9, 413 before), input too long
    OVERLOADED = "429"  # no permit free
    BACKEND_FAILED = "424"
    CLIENT_ERROR = "4xx"
    SERVER_ERROR = "5xx"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    BAD_RESPONSE = "bad_response"
    CLIENT = "client"  # an exception of the in-process endpoint


@dataclass
class RequestLog:
    """Every measured request of a point (plan.log_requests): flat arrays, its rows made after the point (off
    the hot path). Times in seconds from the point's start; intended: NaN in the closed loop."""

    index: array[int] = field(default_factory=lambda: array("l"))
    intended_s: array[float] = field(default_factory=lambda: array("d"))
    sent_s: array[float] = field(default_factory=lambda: array("d"))
    end_s: array[float] = field(default_factory=lambda: array("d"))
    outcome: list[str] = field(default_factory=list)  # `ok` or the error class
    tokens: array[int] = field(default_factory=lambda: array("l"))

    def columns(self, inputs: list[int]) -> dict[str, list[Any]]:
        """The log as ShareResult.request_log holds it: each of REQUEST_COLUMNS, one value per request (`inputs`:
        the plan's texts per request, by index)."""
        indices = self.index.tolist()
        return {
            "intended_s": self.intended_s.tolist(),
            "sent_s": self.sent_s.tolist(),
            "end_s": self.end_s.tolist(),
            "index": indices,
            "tokens": self.tokens.tolist(),
            "outcome": self.outcome,
            "texts": [inputs[i] for i in indices],
        }


class Recorder:
    """Raw values while the point runs; histograms after it."""

    def __init__(self, plan: SharePlan):
        self.plan = plan
        self.window_start = plan.start_at + plan.warmup_s
        self.result = ShareResult(plan.worker)
        self.values: dict[LatencyQuantity | ServerQuantity, array[int]] = {
            name: array("q") for name in (*LatencyQuantity, *SERVER_HEADERS.values())
        }
        self.service = self.values[LatencyQuantity.SERVICE]  # appended to once an answer: bound once
        self.lag = array("q")
        self.parse_s = 0.0
        # The next answer whose body is parsed arrives at or after this (perf_counter): -inf while every one is
        # (the first VALIDATE_FIRST, and all from a bad one on), else when parsing is back within its budget.
        self.validate_from = -math.inf
        # Filled only with plan.log_requests: flat arrays, rows made after the point (off the hot path).
        self.log = RequestLog() if plan.log_requests else None

    def measured(self, at: float) -> bool:
        return at >= self.window_start

    def error(self, cls: Outcome, message: str) -> None:
        r = self.result
        if cls == Outcome.BAD_RESPONSE:  # from the first bad answer on, every body is parsed
            self.validate_from = -math.inf
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
        ended = outcome.done if outcome.__class__ is Response else perf_counter()
        if r.last_end is None or ended > r.last_end:
            r.last_end = ended
        cls, counted = self._outcome(index, due, sent, outcome)
        if self.log is not None:
            start = self.plan.start_at
            self.log.index.append(index)
            self.log.intended_s.append(math.nan if due is None else due - start)
            self.log.sent_s.append(sent - start)
            self.log.end_s.append(ended - start)
            self.log.outcome.append(cls)
            self.log.tokens.append(self.plan.tokens[index] if counted is None else counted)

    def _outcome(
        self, index: int, due: float | None, sent: float, outcome: Response | BaseException
    ) -> tuple[Outcome, int | None]:
        """Count the outcome: `ok` or its error class, and the tokens the server counted (None: it did not say)."""
        r = self.result
        if not isinstance(outcome, Response):
            cls = error_class(outcome)
            self.error(cls, f"{type(outcome).__name__}: {outcome}")
            return cls, None
        if outcome.status >= 400:
            cls = status_outcome(outcome.status, outcome.body)
            self.error(cls, f"HTTP {outcome.status}: {outcome.body[:200].decode('utf-8', 'replace')}")
            return cls, None
        # Whether this answer is parsed in full, decided here (most are not): a call fewer a request.
        if self.plan.wire is not None and outcome.done >= self.validate_from and not self._valid(index, outcome):
            return Outcome.BAD_RESPONSE, None
        r.ok += 1
        r.texts_ok += self.plan.inputs[index]
        v = self.values
        self.service.append(int((outcome.done - sent) * 1e6))
        if due is not None:
            v[LatencyQuantity.SCHEDULED].append(int((outcome.done - due) * 1e6))
            stop = pool_stop()
            if stop is not None:  # the driver may end the window once its verdict is certain
                stop.count(outcome.done - due)
            v[LatencyQuantity.DISPATCH_DELAY].append(int((sent - due) * 1e6))
        counted = None
        for name, value in outcome.headers:  # only the x-* headers: none from most servers
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
        return Outcome.OK, counted

    def _valid(self, index: int, response: Response) -> bool:
        """Parse a sample of the answers in full with the kind's wire: a 200 with a wrong body is an error.
        Whether this one is parsed is one comparison of its arrival time (`validate_from`) on the hot path."""
        wire = self.plan.wire
        if wire is None or response.done < self.validate_from:
            return True
        started = perf_counter()
        first = self.result.validated < VALIDATE_FIRST
        self.result.validated += 1
        try:
            wire.parse(loads(response.body), self.plan.inputs[index])
        except ValueError as exc:  # broken or too deeply nested JSON, a wrong shape (WireShapeError)
            # From the first bad body on, every answer is parsed: the counts are then exact, not sampled.
            self.error(
                Outcome.BAD_RESPONSE,
                f"HTTP {response.status} but {exc}: {response.body[:160].decode('utf-8', 'replace')}",
            )
            return False
        finally:
            if not first:  # the first ones, always parsed, pay one-time costs (numpy's first calls): not the budget's
                self.parse_s += perf_counter() - started
                # Within VALIDATE_BUDGET of the share's time: the next body parsed is the first to arrive once
                # parse_s <= VALIDATE_BUDGET x (its arrival - the start); every one after a bad one.
                if Outcome.BAD_RESPONSE not in self.result.errors:
                    self.validate_from = self.plan.start_at + self.parse_s / VALIDATE_BUDGET
        return True

    def close(self) -> ShareResult:
        r = self.result
        r.histograms = {
            name: histograms.encode(histograms.from_values(values)) if values else None
            for name, values in self.values.items()
        }
        r.loop_lag = histograms.encode(histograms.from_values(self.lag)) if self.lag else None
        if self.log is not None:
            r.request_log = self.log.columns(self.plan.inputs)
        return r


def status_outcome(status: int, body: bytes = b"") -> Outcome:
    """Error classes counted per point: TEI's refusals by their meaning, the rest by family."""
    if status in (413, 422):
        return Outcome.TOO_LARGE
    if status == 429:
        return Outcome.OVERLOADED
    if status == 424:
        return Outcome.BACKEND_FAILED
    return Outcome.CLIENT_ERROR if status < 500 else Outcome.SERVER_ERROR


def error_class(exc: BaseException) -> Outcome:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return Outcome.TIMEOUT
    if isinstance(exc, (ConnectionLost, ConnectionError, OSError)):
        return Outcome.CONNECTION
    if isinstance(exc, ProtocolViolation):
        return Outcome.BAD_RESPONSE
    return Outcome.CLIENT
