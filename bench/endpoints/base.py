"""The endpoint protocol: "texts -> vectors" and "query + texts -> scores", each with timings.

Identity and load work only through these two protocols, so every serving path (TEI, an
OpenAI-compatible server, a Cohere-shaped reranker, the in-process reference) is swappable.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class CallTiming:
    """One request: how many inputs, client-side wall time, and what the server reported about it."""

    inputs: int
    wall_ms: float
    server: dict[str, float] = field(default_factory=dict)  # e.g. TEI's x-inference-time (ms), x-compute-tokens


@dataclass
class Embeddings:
    vectors: np.ndarray  # (n, dim) float32, in input order
    calls: list[CallTiming]


@dataclass
class Scores:
    scores: np.ndarray  # (n,) float32 by input index; NaN where the endpoint returned no score (top_n)
    order: list[int]  # input indexes in the order the endpoint ranked them
    calls: list[CallTiming]


@dataclass(frozen=True)
class WireRequest:
    """One request exactly as an endpoint kind shapes it (its wire contract, defined once per kind).

    The API clients send `payload` through httpx; the load generator encodes `body()` once and
    replays the bytes on its own connections. Both read answers with the same wire's `parse`.
    """

    method: str
    url: str  # the full route URL
    payload: dict[str, Any]
    inputs: int  # texts (embed) or documents (rerank) in this request

    def body(self) -> bytes:
        return json.dumps(self.payload, ensure_ascii=False, separators=(",", ":")).encode()


class WireShapeError(ValueError):
    """An answer that is valid JSON but not the shape the endpoint kind promises."""

    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


class EmbedWire(Protocol):
    """texts -> request; decoded JSON answer -> (n, dim) vectors. Pure: no sockets, picklable."""

    def request(self, texts: list[str]) -> WireRequest: ...

    def parse(self, answer: Any, n: int) -> np.ndarray: ...


class RerankWire(Protocol):
    """query + texts -> request; decoded JSON answer -> (index, score) pairs as the endpoint ranked them."""

    def request(self, query: str, texts: list[str], top_n: int | None = None) -> WireRequest: ...

    def parse(self, answer: Any, n: int) -> list[tuple[int, float]]: ...


@runtime_checkable
class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> Embeddings: ...

    def describe(self) -> dict[str, object]: ...

    def dtype(self) -> str | None: ...  # the serving dtype when the endpoint says (TEI /info), else None

    def close(self) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores: ...

    def describe(self) -> dict[str, object]: ...

    def dtype(self) -> str | None: ...

    def close(self) -> None: ...


def batches(n: int, size: int) -> list[range]:
    """Index ranges of at most `size` items covering 0..n."""
    size = max(1, size)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def scores_from_results(n: int, results: list[tuple[int, float]]) -> tuple[np.ndarray, list[int]]:
    """(index, score) pairs as the endpoint returned them -> a score per input and the ranked order."""
    scores = np.full(n, np.nan, dtype=np.float32)
    order: list[int] = []
    for index, score in results:
        scores[index] = score
        order.append(index)
    return scores, order
