"""OpenAI-compatible `/embeddings`, as LiteLLM, infinity, vLLM, Ollama (/v1) and TEI serve it.

The URL is the OpenAI *base URL* exactly as an OpenAI client takes it, and `/embeddings` is appended:
`http://litellm:4000/v1`, `http://vllm:8000/v1`, but `http://infinity:7997` (infinity has no /v1).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from bench.endpoints.base import CallTiming, Embeddings, WireRequest, WireShapeError, batches, vectors_of
from bench.endpoints.cache import probe_vectors, served_key
from bench.endpoints.client import HttpEndpoint


def decode_embedding(value: Any) -> list | np.ndarray | None:
    """A float list (as sent), or base64 of little-endian float32 (`encoding_format: "base64"`) decoded."""
    if isinstance(value, list):
        return value  # checked, with the others, by `vectors_of`
    if isinstance(value, str):
        try:
            return np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4").astype(np.float32)
        except (ValueError, TypeError):
            return None
    return None


class OpenAIEmbedWire:
    """The OpenAI `/embeddings` wire shape:
    `{model, input, encoding_format?, dimensions?}` -> `{data: [{index, embedding}]}`."""

    def __init__(self, url: str, model: str, encoding_format: str | None = "float", dimensions: int | None = None):
        self.url = f"{url.rstrip('/')}/embeddings"
        self.model = model
        self.encoding_format = encoding_format
        self.dimensions = dimensions
        self.dim: int | None = None  # learnt from the first answer: a dimension that changes later is an error

    def request(self, texts: list[str]) -> WireRequest:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.encoding_format:
            body["encoding_format"] = self.encoding_format
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return WireRequest("POST", self.url, body, len(texts))

    def parse(self, answer: Any, n: int) -> np.ndarray:
        expected = WireShapeError(f"{{data: [{{index, embedding}}]}} for {n} inputs")
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != n:
            raise expected
        rows: list[Any] = [None] * n
        for position, item in enumerate(data):
            vector = decode_embedding(item.get("embedding")) if isinstance(item, dict) else None
            index = item.get("index", position) if isinstance(item, dict) else None
            if vector is None or type(index) is not int or not 0 <= index < n or rows[index] is not None:
                raise expected
            rows[index] = vector  # servers may answer out of order; `index` says where each belongs
        vectors = vectors_of(rows, n, self.dim)
        if n and self.dim is None:
            self.dim = vectors.shape[1]
        return vectors


class OpenAIEmbedder:
    """texts -> vectors through POST {base}/embeddings."""

    kind = "openai"

    def __init__(
        self,
        name: str,
        url: str,
        model: str,
        key_env: str | None = None,
        batch_size: int = 32,
        encoding_format: str | None = "float",
        dimensions: int | None = None,
        timeout_s: float = 120.0,
    ):
        self.name = name
        self.http = HttpEndpoint(name, url, key_env, timeout_s)
        self.wire = OpenAIEmbedWire(self.http.url, model, encoding_format, dimensions)
        self.batch_size = batch_size
        self.events = self.http.events

    def embed(self, texts: list[str]) -> Embeddings:
        parts: list[np.ndarray] = []
        calls: list[CallTiming] = []
        for chunk in batches(len(texts), self.batch_size):
            request = self.wire.request([texts[i] for i in chunk])
            response, wall_ms = self.http.request_retrying(request.method, request.url, request.payload)
            answer = self.http.json_of(response)
            try:
                parts.append(self.wire.parse(answer, len(chunk)))
            except WireShapeError as exc:
                raise self.http.shape_error(request.url, exc.expected, answer) from None
            calls.append(CallTiming(len(chunk), wall_ms))
        vectors = np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors, calls)

    def describe(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "url": self.http.url,
            "model": self.wire.model,
            "encoding_format": self.wire.encoding_format,
            "dimensions": self.wire.dimensions,
            "batch_size": self.batch_size,
        }

    def dtype(self) -> str | None:
        return None  # the OpenAI shape does not say

    def identity(self) -> dict[str, object]:
        """What the served vectors depend on that the OpenAI shape tells: the model name and the dimensions
        asked for (the served dimension and a probe vector join it in the cache key)."""
        return {"kind": self.kind, "model": self.wire.model, "dimensions": self.wire.dimensions}

    def request_batch(self) -> int:
        return self.batch_size

    def default_concurrency(self) -> int:
        return 4  # the OpenAI shape says nothing of the server's limits

    def cache_key(self) -> str:
        """`served_key` of the model name and the probe vectors (the OpenAI shape tells no input limit: the long
        probes cross each usual one)."""
        return served_key(self.identity(), probe_vectors(lambda texts: self.embed(texts).vectors))

    def close(self) -> None:
        self.http.close()
