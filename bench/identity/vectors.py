"""Vector identity, streamed: texts go through every endpoint a chunk at a time, and only per-text
figures (cosine, max |difference|, norms) and running top-10 neighbour lists are kept.

Memory is O(texts + queries x dim), not O(texts x dim x endpoints): 100,000 texts of dimension 1,024
through 3 endpoints would be 1.2 GB of vectors; here they never coexist beyond one chunk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

from bench.core.errors import ServerError
from bench.endpoints.base import Embedder, WireShapeError, check_vectors
from bench.identity.inputs import IdentityInput

TOP_K = 10
_TINY = np.float32(1e-12)


def unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit_vectors: np.ndarray = vectors / np.maximum(norms, _TINY)
    return unit_vectors


class TopK:
    """The k best corpus ids per query by cosine, merged chunk by chunk."""

    def __init__(self, queries: np.ndarray, k: int, self_index: list[int] | None):
        self.queries = unit(queries.astype(np.float32))
        self.k = k
        self.self_index = np.asarray(self_index, dtype=np.int64) if self_index is not None else None
        self.scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        self.ids = np.full((len(queries), k), -1, dtype=np.int64)

    def update(self, chunk_unit: np.ndarray, start: int) -> None:
        if chunk_unit.shape[1] != self.queries.shape[1]:
            raise ValueError("query and text vectors differ in dimension")
        sims = self.queries @ chunk_unit.T
        if self.self_index is not None:  # a query taken from the corpus is not its own neighbour
            rows = np.nonzero((self.self_index >= start) & (self.self_index < start + sims.shape[1]))[0]
            sims[rows, self.self_index[rows] - start] = -np.inf
        ids = np.broadcast_to(np.arange(start, start + sims.shape[1]), sims.shape)
        all_scores = np.concatenate([self.scores, sims], axis=1)
        all_ids = np.concatenate([self.ids, ids], axis=1)
        keep = (
            np.argpartition(-all_scores, self.k - 1, axis=1)[:, : self.k]
            if all_scores.shape[1] > self.k
            else np.argsort(-all_scores, axis=1)[:, : self.k]
        )
        self.scores = np.take_along_axis(all_scores, keep, axis=1)
        self.ids = np.take_along_axis(all_ids, keep, axis=1)


@dataclass
class EndpointVectors:
    name: str
    norms: np.ndarray
    dim: int = 0
    seconds: float = 0.0  # time spent inside the endpoint's embed calls
    topk: TopK | None = None
    sample: dict[int, np.ndarray] = field(default_factory=dict)  # in-batch vectors kept for batch invariance


@dataclass
class PairVectors:
    a: str
    b: str
    cosine: np.ndarray  # per text; on the shared leading dimensions when the sizes differ
    max_abs: np.ndarray  # per text, over the shared leading dimensions


@dataclass
class VectorRun:
    endpoints: dict[str, EndpointVectors]
    pairs: list[PairVectors]


def _timed_embed(endpoint: Embedder, texts: list[str], record: EndpointVectors) -> np.ndarray:
    started = time.perf_counter()
    vectors = endpoint.embed(texts).vectors
    record.seconds += time.perf_counter() - started
    try:  # the wires' own check (HTTP kinds have run it already); in-process kinds get it here
        check_vectors(vectors, len(texts), record.dim or None)
    except WireShapeError as exc:
        raise ServerError(endpoint.name, f"answered vectors that are not {exc.expected}") from None
    return vectors.astype(np.float32, copy=False)


def stream_vectors(
    endpoints: list[Embedder],
    inputs: IdentityInput,
    pairs: list[tuple[str, str]],
    sample: list[int],
    chunk_size: int = 1024,
    advance: Callable[[int], None] = lambda n: None,
) -> VectorRun:
    n = len(inputs.texts)
    records = {e.name: EndpointVectors(e.name, np.zeros(n, dtype=np.float32)) for e in endpoints}
    for endpoint in endpoints:
        record = records[endpoint.name]
        queries = _timed_embed(endpoint, inputs.queries, record) if inputs.queries else np.zeros((0, 1), np.float32)
        record.dim = queries.shape[1]
        record.topk = TopK(
            queries, min(TOP_K, max(1, n - (1 if inputs.query_self_index else 0))), inputs.query_self_index
        )
    results = [PairVectors(a, b, np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32)) for a, b in pairs]
    wanted = set(sample)
    for start in range(0, n, chunk_size):
        chunk = inputs.texts[start : start + chunk_size]
        vectors = {e.name: _timed_embed(e, chunk, records[e.name]) for e in endpoints}
        # One BLAS thread, for ragbench's own products only (not the endpoints' models): they are small
        # (queries x chunk), and OpenBLAS's spinning workers made them 15x slower on busy cores (23 vs 1.5 ms).
        with threadpool_limits(limits=1, user_api="blas"):
            _compare_chunk(inputs, records, results, wanted, start, vectors)
        advance(len(chunk))
    return VectorRun(records, results)


def _compare_chunk(
    inputs: IdentityInput,
    records: dict[str, EndpointVectors],
    results: list[PairVectors],
    wanted: set[int],
    start: int,
    vectors: dict[str, np.ndarray],
) -> None:
    for name, v in vectors.items():
        record = records[name]
        if inputs.queries and v.shape[1] != record.dim:
            raise ServerError(name, f"answered dimension {v.shape[1]} for texts but {record.dim} for queries")
        record.dim = v.shape[1]
        stop = start + len(v)
        record.norms[start:stop] = np.linalg.norm(v, axis=1)
        assert record.topk is not None  # stream_vectors sets it from the queries before any text
        record.topk.update(unit(v), start)
        for i in wanted.intersection(range(start, stop)):
            record.sample[i] = v[i - start].copy()
    for pair in results:
        va, vb = vectors[pair.a], vectors[pair.b]
        d = min(va.shape[1], vb.shape[1])
        va, vb = va[:, :d], vb[:, :d]
        dots = np.einsum("ij,ij->i", va, vb)
        denominators = np.maximum(np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1), _TINY)
        pair.cosine[start : start + len(va)] = dots / denominators
        pair.max_abs[start : start + len(va)] = np.abs(va - vb).max(axis=1)


def top10_overlap(a: TopK, b: TopK) -> float:
    """Mean over queries of the share of top-k neighbour ids both endpoints return."""
    if a.ids.shape[0] == 0:
        return 1.0
    shared = [len(set(x.tolist()) & set(y.tolist())) / a.k for x, y in zip(a.ids, b.ids)]
    return float(np.mean(shared))


def batch_invariance(endpoint: Embedder, texts: list[str], record: EndpointVectors) -> dict[int, float]:
    """Cosine between each sampled text embedded alone and the same text inside a batch."""
    found: dict[int, float] = {}
    for index, in_batch in sorted(record.sample.items()):
        alone = _timed_embed(endpoint, [texts[index]], record)[0]
        if alone.shape != in_batch.shape:
            found[index] = 0.0
            continue
        found[index] = float(alone @ in_batch / max(np.linalg.norm(alone) * np.linalg.norm(in_batch), _TINY))
    return found
