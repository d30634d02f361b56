"""What the meter records of one forwarded call: its status class, the texts it carried, whether it
repeated a failed call (a retry), and the upstream's own time where its reply tells it."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from bench.core.http import loads

# The request fields that carry the texts of one call: OpenAI/infinity `input`, TEI `inputs`,
# Cohere/TEI rerank `documents` / `texts`. The first present one counts.
TEXT_FIELDS = ("input", "inputs", "documents", "texts")
# Headers in which an upstream tells its own time for a call, milliseconds, first found wins: TEI's
# `x-total-time` (queue + tokenization + inference), then any of its parts, then other servers' names.
UPSTREAM_TIME_HEADERS = ("x-total-time", "x-inference-time", "x-compute-time", "x-process-time")


class StatusClass(StrEnum):
    """How an upstream answered a call, as the ingest and sizing advice needs it told apart."""

    OK = "ok"
    TOO_MANY_REQUESTS = "429"  # rate or concurrency limit
    TOO_LARGE = "413"  # payload (batch) too large
    UNPROCESSABLE = "422"  # TEI: batch or input over its limits
    SERVER_ERROR = "5xx"
    OTHER_ERROR = "other"  # any other 4xx, and calls never answered
    NO_ANSWER = "no-answer"


# The answers that refuse a call (rate, size or server errors), in the order the ingest report lists them.
REFUSALS = (StatusClass.TOO_MANY_REQUESTS, StatusClass.TOO_LARGE, StatusClass.UNPROCESSABLE, StatusClass.SERVER_ERROR)


def status_class(status: int | None) -> StatusClass:
    if status is None:
        return StatusClass.NO_ANSWER
    if status < 400:
        return StatusClass.OK
    named = {429: StatusClass.TOO_MANY_REQUESTS, 413: StatusClass.TOO_LARGE, 422: StatusClass.UNPROCESSABLE}
    if status in named:
        return named[status]
    return StatusClass.SERVER_ERROR if status >= 500 else StatusClass.OTHER_ERROR


def request_texts(body: bytes) -> list[str] | None:
    """The texts a JSON request body carries (a string field is one text), None where it carries no text field
    (a chat call, a body that is not JSON)."""
    if not body:
        return None
    try:
        data = loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for name in TEXT_FIELDS:
        value = data.get(name)
        if isinstance(value, list):
            return [v if isinstance(v, str) else repr(v) for v in value]
        if isinstance(value, str):
            return [value]
    return None


def texts_in(body: bytes) -> int | None:
    """How many texts a JSON request body carries, None where it carries no text field."""
    texts = request_texts(body)
    return None if texts is None else len(texts)


def upstream_seconds(headers: Mapping[str, str]) -> float | None:
    """The upstream's own time for the call from its timing headers (milliseconds), None where it sent none."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name in UPSTREAM_TIME_HEADERS:
        if name in lowered:
            with contextlib.suppress(ValueError):
                value = float(lowered[name])
                if 0 <= value < 1e9:
                    return value / 1000
    return None


def body_digest(body: bytes) -> str:
    return hashlib.sha1(body, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class SentRequest:
    """A call's request as the client sent it, kept in memory (never written: its headers may hold a key) so that
    the same calls can be sent again straight to the upstream."""

    method: str
    path: str  # after the route: what the upstream's URL is joined with
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True)
class CallRecord:
    """One forwarded call: when it started (the meter's monotonic clock), its route and outcome."""

    route: str
    started_s: float
    seconds: float
    status: int | None
    texts: int | None
    retry: bool  # its body equals one of an earlier call of the route that failed
    upstream_s: float | None
    prompt_tokens: int = 0  # from the reply's `usage`, where it has one
    completion_tokens: int = 0
    request: SentRequest | None = None  # kept only by a meter that keeps requests

    @property
    def status_class(self) -> StatusClass:
        return status_class(self.status)
