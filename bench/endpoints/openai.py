"""OpenAI-compatible `/embeddings`, as LiteLLM, infinity, vLLM, Ollama (/v1) and TEI serve it.

The URL is the OpenAI *base URL* exactly as an OpenAI client takes it, and `/embeddings` is appended:
`http://litellm:4000/v1`, `http://vllm:8000/v1`, but `http://infinity:7997` (infinity has no /v1).
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from bench.endpoints.base import CallTiming, Embeddings, batches
from bench.endpoints.http import HttpEndpoint


def decode_embedding(value: Any) -> np.ndarray | None:
    """A float list, or base64 of little-endian float32 (`encoding_format: "base64"`)."""
    if isinstance(value, list):
        return np.asarray(value, dtype=np.float32)
    if isinstance(value, str):
        try:
            return np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4").astype(np.float32)
        except (ValueError, TypeError):
            return None
    return None


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
    ):
        self.name = name
        self.http = HttpEndpoint(name, url, key_env)
        self.model = model
        self.batch_size = batch_size
        self.encoding_format = encoding_format
        self.dimensions = dimensions

    def embed(self, texts: list[str]) -> Embeddings:
        url = f"{self.http.url}/embeddings"
        parts: list[np.ndarray] = []
        calls: list[CallTiming] = []
        for chunk in batches(len(texts), self.batch_size):
            body: dict[str, Any] = {"model": self.model, "input": [texts[i] for i in chunk]}
            if self.encoding_format:
                body["encoding_format"] = self.encoding_format
            if self.dimensions is not None:
                body["dimensions"] = self.dimensions
            response, wall_ms = self.http.request("POST", url, body)
            answer = self.http.json_of(response)
            parts.append(self._vectors(url, answer, len(chunk)))
            calls.append(CallTiming(len(chunk), wall_ms))
        vectors = np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors, calls)

    def _vectors(self, url: str, answer: Any, n: int) -> np.ndarray:
        expected = f"{{data: [{{index, embedding}}]}} for {n} inputs"
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != n:
            raise self.http.shape_error(url, expected, answer)
        rows: list[np.ndarray | None] = [None] * n
        for position, item in enumerate(data):
            vector = decode_embedding(item.get("embedding")) if isinstance(item, dict) else None
            index = item.get("index", position) if isinstance(item, dict) else None
            if vector is None or not isinstance(index, int) or not 0 <= index < n:
                raise self.http.shape_error(url, expected, answer)
            rows[index] = vector  # servers may answer out of order; `index` says where each belongs
        if any(r is None for r in rows) or len({r.shape for r in rows}) != 1:
            raise self.http.shape_error(url, expected, answer)
        return np.vstack(rows)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "url": self.http.url, "model": self.model,
                "encoding_format": self.encoding_format, "dimensions": self.dimensions, "batch_size": self.batch_size}

    def dtype(self) -> str | None:
        return None  # the OpenAI shape does not say

    def close(self) -> None:
        self.http.close()
