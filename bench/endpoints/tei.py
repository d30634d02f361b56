"""Text Embeddings Inference, native routes: /embed, /rerank, /info, /tokenize, /metrics.

Follows TEI's code where its OpenAPI document disagrees (see docs/endpoints.md): too many inputs is
422 since 1.9.0 and 413 before, so both are read as "split smaller"; 429 means no permit was free
(since 1.9.0 every input takes one) and is retried with a short backoff.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core.errors import ServerError
from bench.core.http import HttpStatusError
from bench.endpoints.base import (
    CallTiming,
    Embeddings,
    Scores,
    WireRequest,
    WireShapeError,
    scores_from_results,
    scores_of,
    vectors_of,
)
from bench.endpoints.cache import probe_vectors, served_key
from bench.endpoints.client import HttpEndpoint

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
    raw: dict[str, Any]


METRICS_PREFIX = "te_"


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "le")
    return f"{{{inner}}}" if inner else ""


def parse_snapshot(text: str) -> dict[str, Any]:
    """TEI's Prometheus text (its `te_*` families) -> {"counters": {...}, "gauges": {...}, "histograms": {name:
    {count, sum, buckets}}}, keyed `name{labels}`: the one reading of /metrics, by prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    hists: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(METRICS_PREFIX):
            continue
        for sample in family.samples:
            key = family.name + _labels(sample.labels)
            if (
                family.type == "counter"
                and sample.name.endswith(("_total", family.name))
                and not sample.name.endswith("_created")
            ):
                counters[key] = counters.get(key, 0.0) + sample.value
            elif family.type == "gauge":
                gauges[key] = sample.value
            elif family.type == "histogram":
                block = hists.setdefault(key, {"count": 0.0, "sum": 0.0, "buckets": {}})
                if sample.name.endswith("_bucket"):
                    block["buckets"][sample.labels.get("le", "+Inf")] = sample.value
                elif sample.name.endswith("_count"):
                    block["count"] = sample.value
                elif sample.name.endswith("_sum"):
                    block["sum"] = sample.value
    return {"counters": counters, "gauges": gauges, "histograms": hists}


def timing_headers(headers: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    for name in TIMING_HEADERS:
        if name in headers:
            with contextlib.suppress(ValueError):
                found[name] = float(headers[name])
    return found


class TeiClient(HttpEndpoint):
    """Raw access to one TEI server's native routes."""

    def __init__(self, name: str, url: str, key_env: str | None = None, timeout_s: float = 120.0):
        super().__init__(name, url, key_env, timeout_s)
        self._info: TeiInfo | None = None

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
                raw=body,
            )
        return self._info

    def post(self, path: str, body: dict[str, Any]) -> tuple[Any, CallTiming]:
        """POST with busy answers (429, 503) retried; the JSON answer and its timing."""
        url = f"{self.url}{path}"
        n = len(body.get("inputs") or body.get("texts") or [])
        response, wall_ms = self.request_retrying("POST", url, body)
        return self.json_of(response), CallTiming(n, wall_ms, timing_headers(response.headers))

    def call(self, wire, request: WireRequest) -> tuple[Any, CallTiming]:
        """Send a wire request (429s retried) and parse the answer with the same wire."""
        answer, timing = self.post(request.url[len(self.url) :], request.payload)
        try:
            return wire.parse(answer, request.inputs), timing
        except WireShapeError as exc:
            raise self.shape_error(request.url, exc.expected, answer) from None

    def tokenize(self, texts: list[str], add_special_tokens: bool = True) -> list[list[dict[str, Any]]]:
        body, _ = self.post("/tokenize", {"inputs": texts, "add_special_tokens": add_special_tokens})
        if not isinstance(body, list) or len(body) != len(texts):
            raise self.shape_error(f"{self.url}/tokenize", f"{len(texts)} token lists", body)
        return body

    def metrics(self) -> dict[str, Any]:
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


class _Batched:
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

    def run(self, n: int, send) -> list:
        """Call `send(index_range)` over batches; on a batch-size refusal, shrink and redo that range."""
        done: list = []
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


class TeiEmbedWire:
    """TEI's /embed wire shape: `{inputs, normalize, truncate?, ...}` -> `[[f32]]`."""

    def __init__(self, url: str, options: dict[str, Any]):
        self.url = f"{url.rstrip('/')}/embed"
        self.options = options
        self.dim: int | None = None  # learnt from the first answer: a dimension that changes later is an error

    def request(self, texts: list[str]) -> WireRequest:
        return WireRequest("POST", self.url, {"inputs": list(texts), **self.options}, len(texts))

    def parse(self, answer: Any, n: int) -> np.ndarray:
        vectors = vectors_of(answer, n, self.dim)
        if n and self.dim is None:
            self.dim = vectors.shape[1]
        return vectors


class TeiRerankWire:
    """TEI's /rerank wire shape: `{query, texts, raw_scores, return_text}` -> `[{index, score}]`
    (no top_n on the wire)."""

    def __init__(self, url: str, options: dict[str, Any]):
        self.url = f"{url.rstrip('/')}/rerank"
        self.options = options

    def request(self, query: str, texts: list[str], top_n: int | None = None) -> WireRequest:
        return WireRequest("POST", self.url, {"query": query, "texts": list(texts), **self.options}, len(texts))

    def parse(self, answer: Any, n: int, top_n: int | None = None) -> list[tuple[int, float]]:
        """TEI scores every text (it has no top_n): `n` results whatever `top_n` says."""
        if not isinstance(answer, list) or not all(isinstance(r, dict) for r in answer):
            raise WireShapeError("[{index, score}]")
        return scores_of([(r.get("index"), r.get("score")) for r in answer], n)


class _TeiEndpoint:
    """What TEI's embedder and reranker share: /info in `describe` (with `info_shown`), the dtype, close."""

    kind: str
    client: TeiClient
    wire: TeiEmbedWire | TeiRerankWire
    info_shown: tuple[str, ...] = ()  # further /info fields `describe` names

    def describe(self) -> dict[str, object]:
        info = self.client.info()
        return {
            "kind": self.kind,
            "url": self.client.url,
            "model": info.model_id,
            "dtype": info.model_dtype,
            "version": info.version,
            **{name: getattr(info, name) for name in self.info_shown},
            **self.wire.options,
        }

    def dtype(self) -> str | None:
        return self.client.info().model_dtype

    def close(self) -> None:
        self.client.close()


class TeiEmbedder(_TeiEndpoint):
    """texts -> vectors through TEI's /embed."""

    kind = "tei"
    info_shown = ("max_client_batch_size",)
    wire: TeiEmbedWire

    def __init__(
        self,
        name: str,
        url: str,
        key_env: str | None = None,
        batch_size: int | None = None,
        normalize: bool = True,
        truncate: bool | None = None,
        truncation_direction: str | None = None,
        dimensions: int | None = None,
        prompt_name: str | None = None,
        timeout_s: float = 120.0,
    ):
        self.name = name
        self.client = TeiClient(name, url, key_env, timeout_s)
        self.events = self.client.events
        self._batched = _Batched(self.client, batch_size)
        options: dict[str, Any] = {"normalize": normalize}
        if truncate is not None:
            options["truncate"] = truncate
        if truncation_direction is not None:
            options["truncation_direction"] = truncation_direction.capitalize()  # TEI's enum: Left | Right
        if dimensions is not None:
            options["dimensions"] = dimensions
        if prompt_name is not None:
            options["prompt_name"] = prompt_name
        self.wire = TeiEmbedWire(self.client.url, options)

    def embed(self, texts: list[str]) -> Embeddings:
        return self._embed(self.wire, texts)

    def _embed(self, wire: TeiEmbedWire, texts: list[str]) -> Embeddings:
        def send(chunk: range):
            return self.client.call(wire, wire.request([texts[i] for i in chunk]))

        parts = self._batched.run(len(texts), send)
        vectors = np.vstack([p[0] for p in parts]) if parts else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors, [p[1] for p in parts])

    def request_batch(self) -> int:
        """Texts per request: the `batch` option within the server's max_client_batch_size."""
        return self._batched.size()

    def default_concurrency(self) -> int:
        """Requests in flight when ingesting: as many whole batches as TEI's permits allow, at most 8."""
        permits = self.client.info().max_concurrent_requests if self._info_known() else 0
        return max(1, min(8, permits // max(1, self.request_batch()))) if permits else 4

    def _info_known(self) -> bool:
        try:
            self.client.info()
        except HttpStatusError:  # a proxy in front of TEI may hide /info
            return False
        return True

    def cache_key(self) -> str:
        """`served_key` of /info's identity and the probe vectors: the long probe is longer than /info's
        max_input_length (or than each usual limit where /info tells none) and sent with `truncate: true`, so the
        server cuts it where it really cuts (whatever /info says) instead of refusing it."""
        limit = self.client.info().max_input_length if self._info_known() else None
        wire = TeiEmbedWire(self.client.url, {**self.wire.options, "truncate": True})
        return served_key(self.identity(), probe_vectors(lambda texts: self._embed(wire, texts).vectors, limit))

    def over_limit(self, texts: list[str]) -> tuple[int | None, str]:
        """How many of `texts` are longer than the model's input limit, counted by the server's own tokenizer
        (/tokenize, special tokens in, as /embed counts them) against /info's max_input_length; None with the
        reason where the server does not tell one of the two (a proxy in front of TEI may hide both)."""
        limit = self.client.info().max_input_length if self._info_known() else 0
        if not limit:
            return None, "not counted: TEI /info gives no max_input_length"
        over = 0
        try:
            for start in range(0, len(texts), self.request_batch()):
                tokens = self.client.tokenize(texts[start : start + self.request_batch()])
                over += sum(len(t) > limit for t in tokens)
        except ServerError as exc:
            return None, f"not counted: TEI /tokenize failed ({exc})"
        return over, f"TEI /tokenize vs /info max_input_length {limit}"

    def identity(self) -> dict[str, object]:
        """What the served vectors depend on, as /info tells it (model, weights' sha, dtype, pooling, input
        limit), with this client's request options (normalize, truncate, dimensions, prompt)."""
        if not self._info_known():
            return {"kind": self.kind, "info": None, **self.wire.options}
        info = self.client.info()
        model_type = info.raw.get("model_type")
        pooling = model_type.get("embedding", {}).get("pooling") if isinstance(model_type, dict) else None
        return {
            "kind": self.kind,
            "model": info.model_id,
            "sha": info.raw.get("model_sha"),
            "dtype": info.model_dtype,
            "pooling": pooling,
            "max_input_length": info.max_input_length,
            **self.wire.options,
        }


class TeiReranker(_TeiEndpoint):
    """query + texts -> scores through TEI's /rerank (which has no top_n: trimmed here)."""

    kind = "tei-rerank"
    wire: TeiRerankWire

    def __init__(
        self,
        name: str,
        url: str,
        key_env: str | None = None,
        batch_size: int | None = None,
        raw_scores: bool = False,
        truncate: bool | None = None,
        timeout_s: float = 120.0,
    ):
        self.name = name
        self.client = TeiClient(name, url, key_env, timeout_s)
        self._batched = _Batched(self.client, batch_size)
        options: dict[str, Any] = {"raw_scores": raw_scores, "return_text": False}
        if truncate is not None:
            options["truncate"] = truncate
        self.wire = TeiRerankWire(self.client.url, options)

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        def send(chunk: range):
            pairs, timing = self.client.call(self.wire, self.wire.request(query, [texts[i] for i in chunk]))
            return [(chunk.start + index, score) for index, score in pairs], timing

        parts = self._batched.run(len(texts), send)
        results = sorted((pair for p in parts for pair in p[0]), key=lambda pair: -pair[1])
        if top_n is not None:
            results = results[:top_n]
        scores, order = scores_from_results(len(texts), results)
        return Scores(scores, order, [p[1] for p in parts])
