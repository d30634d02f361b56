"""One TEI server's native routes (/info, /tokenize, /metrics, JSON posts with their timing headers) and the
splitting of inputs into batches the server takes.

Too many inputs is 422 since TEI 1.9.0 and 413 before, so both are read as "split smaller" (`batch_limit`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar

from bench.core.http import DEFAULT_CAP, BodyCap, HttpStatusError
from bench.endpoints.base import CallTiming, WireRequest, WireShapeError
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.tei_metrics import MetricsSnapshot, parse_snapshot

T = TypeVar("T")


class TeiWire(Protocol):
    """A TEI route's wire shape: its answer read for `inputs` texts."""

    def parse(self, answer: Any, n: int) -> Any: ...


DEFAULT_CLIENT_BATCH = 32  # TEI's own default max_client_batch_size, used until /info says otherwise
_BATCH_LIMIT = re.compile(r"batch size (\d+) > maximum allowed batch size (\d+)")
# Timing headers TEI sets on every success: milliseconds, plus characters and tokens counted.
TIMING_HEADERS = (
    "x-compute-time",
    "x-compute-characters",
    "x-compute-tokens",
    "x-total-time",
    "x-tokenization-time",
    "x-queue-time",
    "x-inference-time",
)


@dataclass(frozen=True)
class TeiInfo:
    model_id: str
    model_dtype: str
    model_kind: str  # "embedding" | "reranker" | "classifier"
    max_client_batch_size: int
    max_input_length: int
    max_concurrent_requests: int
    auto_truncate: bool
    version: str
    model_sha: object  # the weights' revision as /info sends it (None: not sent)
    pooling: object  # model_type.embedding.pooling (None: not an embedding model, or not sent)


class TeiToken(TypedDict):
    """One token of TEI's /tokenize answer (its wire shape)."""

    id: int
    text: str
    special: bool
    start: int | None
    stop: int | None


def _pooling(model_type: object) -> object:
    """/info's model_type.embedding.pooling; None where it is no embedding model's."""
    embedding = model_type.get("embedding") if isinstance(model_type, dict) else None
    return embedding.get("pooling") if isinstance(embedding, dict) else None


def timing_headers(headers: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    for name in TIMING_HEADERS:
        if name in headers:
            with contextlib.suppress(ValueError):
                found[name] = float(headers[name])
    return found


class TeiClient(HttpEndpoint):
    """Raw access to one TEI server's native routes."""

    _info: TeiInfo | None = None  # /info, asked once

    def info(self) -> TeiInfo:
        if self._info is None:
            url = f"{self.url}/info"
            response, _ = self.request("GET", url)
            body = self.json_of(response)
            if not isinstance(body, dict) or "model_id" not in body:
                raise self.shape_error(url, "TEI /info with model_id", body)
            model_type = body.get("model_type") or {}
            self._info = TeiInfo(
                model_id=str(body["model_id"]),
                model_dtype=str(body.get("model_dtype", "unknown")),
                model_kind=next(iter(model_type), "unknown") if isinstance(model_type, dict) else str(model_type),
                max_client_batch_size=int(body.get("max_client_batch_size") or DEFAULT_CLIENT_BATCH),
                max_input_length=int(body.get("max_input_length") or 0),
                max_concurrent_requests=int(body.get("max_concurrent_requests") or 0),
                auto_truncate=bool(body.get("auto_truncate", False)),
                version=str(body.get("version", "unknown")),
                model_sha=body.get("model_sha"),
                pooling=_pooling(model_type),
            )
        return self._info

    def post(self, path: str, body: Mapping[str, object], cap: BodyCap = DEFAULT_CAP) -> tuple[Any, CallTiming]:
        """POST with busy answers (429, 503) retried; the JSON answer (read up to `cap`) and its timing."""
        url = f"{self.url}{path}"
        texts = body.get("inputs") or body.get("texts") or []
        n = len(texts) if isinstance(texts, list) else 0
        response, wall_ms = self.request_retrying("POST", url, body, cap)
        return self.json_of(response), CallTiming(n, wall_ms, timing_headers(response.headers))

    def call(self, wire: TeiWire, request: WireRequest) -> tuple[Any, CallTiming]:
        """Send a wire request (429s retried) and parse the answer with the same wire."""
        answer, timing = self.post(request.url[len(self.url) :], request.payload, request.cap)
        try:
            return wire.parse(answer, request.inputs), timing
        except WireShapeError as exc:
            raise self.shape_error(request.url, exc.expected, answer) from None

    def tokenize(self, texts: list[str], add_special_tokens: bool = True) -> list[list[TeiToken]]:
        body, _ = self.post("/tokenize", {"inputs": texts, "add_special_tokens": add_special_tokens})
        if not isinstance(body, list) or len(body) != len(texts):
            raise self.shape_error(f"{self.url}/tokenize", f"{len(texts)} token lists", body)
        return body

    def metrics(self) -> MetricsSnapshot:
        response, _ = self.request("GET", f"{self.url}/metrics")
        return parse_snapshot(response.text)


def batch_limit(exc: HttpStatusError, sent: int) -> int | None:
    """The batch to try after a batch-size refusal (422 since TEI 1.9.0, 413 before): the server's maximum
    when its message names one, else half of what was `sent` (a proxy's "payload too large", a batch
    refusal in other words); None for any other error."""
    if exc.status not in (413, 422):
        return None
    match = _BATCH_LIMIT.search(exc.message)
    if match:
        return int(match.group(2))
    too_large = exc.status == 413 or "batch" in exc.message.lower()
    return sent // 2 if too_large else None


class TeiBatches:
    """Splits inputs at the server's max_client_batch_size; learns a smaller limit from a refusal."""

    def __init__(self, client: TeiClient, batch_size: int | None):
        self.client = client
        self.requested = batch_size
        self._size: int | None = None

    def size(self) -> int:
        if self._size is None:
            try:
                limit = self.client.info().max_client_batch_size
            except HttpStatusError:
                limit = DEFAULT_CLIENT_BATCH  # a proxy in front of TEI may hide /info
            self._size = min(self.requested, limit) if self.requested else limit
        return self._size

    def run(self, n: int, send: Callable[[range], T]) -> list[T]:
        """Call `send(index_range)` over batches; on a batch-size refusal, shrink and redo that range."""
        done: list[T] = []
        start = 0
        while start < n:
            chunk = range(start, min(start + self.size(), n))
            try:
                done.append(send(chunk))
            except HttpStatusError as exc:
                limit = batch_limit(exc, len(chunk))
                if limit is None or limit >= len(chunk) or limit < 1:
                    raise
                self.client.count(f"split_{exc.status}")
                self._size = limit
                continue
            start = chunk.stop
        return done
