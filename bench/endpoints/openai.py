"""OpenAI-compatible `/embeddings`, as LiteLLM, infinity, vLLM, Ollama (/v1) and TEI serve it.

The URL is the OpenAI *base URL* exactly as an OpenAI client takes it, and `/embeddings` is appended:
`http://litellm:4000/v1`, `http://vllm:8000/v1`, but `http://infinity:7997` (infinity has no /v1).
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import numpy as np

from bench.core.errors import UserError
from bench.endpoints.base import (
    CallTiming,
    Embeddings,
    EndpointDescription,
    EndpointKind,
    ServedIdentity,
    WireRequest,
    WireShapeError,
    batches,
    embed_cap,
    vectors_of,
)
from bench.endpoints.cache import probe_vectors, served_key
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.options import OpenAIOptions
from bench.endpoints.wire_bodies import OpenAIEmbedBody


def decode_embedding(value: Any) -> list[Any] | np.ndarray | None:
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
        body: OpenAIEmbedBody = {"model": self.model, "input": list(texts)}
        if self.encoding_format:
            body["encoding_format"] = self.encoding_format
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return WireRequest("POST", self.url, body, len(texts), embed_cap(len(texts), self.dim or self.dimensions))

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


def usage_tokens(answer: Any) -> dict[str, float]:
    """`usage.prompt_tokens` of an answer, as CallTiming.server holds it; {} where the server reports none."""
    usage = answer.get("usage") if isinstance(answer, dict) else None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if type(tokens) is not int or tokens < 0:
        return {}  # absent, null, or not a count: not reported (a tokenizer may count them)
    return {"usage.prompt_tokens": float(tokens)}


class TokenizerFile:
    """Tokens of texts counted with a local `tokenizer.json` (the `tokenizers` package; nothing downloaded)."""

    def __init__(self, path: str):
        from tokenizers import Tokenizer

        try:
            self.tokenizer = Tokenizer.from_file(path)
        except Exception as exc:  # the Rust side raises a bare Exception for a missing or unreadable file
            raise UserError(f"tokenizer={path}: not a tokenizer.json the tokenizers package reads ({exc})") from None
        self.path = path

    def count(self, texts: list[str]) -> int:
        return sum(len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=True))


class OpenAIEmbedder:
    """texts -> vectors through POST {base}/embeddings."""

    kind = EndpointKind.OPENAI

    def __init__(self, name: str, url: str, given: OpenAIOptions, transport: httpx.BaseTransport | None = None):
        self.name = name
        # Loaded before anything is sent: a bad path is a user error at the start, not after an ingest.
        self.tokenizer = TokenizerFile(given.tokenizer) if given.tokenizer else None
        self.http = HttpEndpoint(name, url, given.key_env, given.timeout_s, transport)
        self.wire = OpenAIEmbedWire(self.http.url, given.model, given.encoding, given.dimensions)
        self.batch_size = given.batch
        self.events = self.http.events

    def embed(self, texts: list[str]) -> Embeddings:
        parts: list[np.ndarray] = []
        calls: list[CallTiming] = []
        for chunk in batches(len(texts), self.batch_size):
            request = self.wire.request([texts[i] for i in chunk])
            response, wall_ms = self.http.request_retrying(request.method, request.url, request.payload, request.cap)
            answer = self.http.json_of(response)
            try:
                parts.append(self.wire.parse(answer, len(chunk)))
            except WireShapeError as exc:
                raise self.http.shape_error(request.url, exc.expected, answer) from None
            calls.append(CallTiming(len(chunk), wall_ms, usage_tokens(answer)))
        vectors = np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors, calls)

    def describe(self) -> EndpointDescription:
        return {
            "kind": self.kind,
            "url": self.http.url,
            "model": self.wire.model,
            "encoding_format": self.wire.encoding_format,
            "dimensions": self.wire.dimensions,
            "batch_size": self.batch_size,
            "tokenizer": self.tokenizer.path if self.tokenizer else None,
        }

    def count_tokens(self, texts: list[str]) -> tuple[int | None, str]:
        """Tokens of `texts` by the `tokenizer=` file, for answers that report no `usage` (bench.targets.embed_cost)."""
        if self.tokenizer is None:
            return None, "not reported: the endpoint tells no token counts (openai: give tokenizer=PATH to count them)"
        return self.tokenizer.count(
            texts
        ), f"counted with the tokenizer {self.tokenizer.path} (special tokens included)"

    def dtype(self) -> str | None:
        return None  # the OpenAI shape does not say

    def identity(self) -> ServedIdentity:
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
