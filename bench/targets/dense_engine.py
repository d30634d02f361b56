"""Exact dense search in-process (`dense`) over the vectors an embedding endpoint gave, by cosine or dot product,
on the on-disk index of vector_index.py."""

from __future__ import annotations

import itertools
from enum import StrEnum
from typing import TypedDict

import numpy as np

from bench.core.errors import ServerError
from bench.core.progress import ProgressFactory
from bench.datasets.model import Dataset
from bench.targets.base import Hit, QueryResult, TargetFailed, batch_results, no_progress
from bench.targets.embed_cost import CostBlock, EmbedMeter
from bench.targets.encoder import Encoder, EncoderDescription
from bench.targets.rerank_stage import one_by_one
from bench.targets.vector_index import VectorIndex

INGEST_BATCH = 8192  # corpus texts encoded and written to the index at a time
# Served vectors whose norms are all within this of 1 count as unit length (a server that normalises in float16
# or bfloat16 included); a server that does not normalise is far off (MiniLM's raw norms are about 5 to 8).
UNIT_TOLERANCE = 1e-2
# Norms within this of 1 are unit length to float32's rounding: such vectors are ranked as served, so the
# reference model's figures do not move in their last bits (and exact ties do not reorder) by a second division.
ROUNDING = 1e-5
NOT_UNIT = "vectors-not-unit-length"  # the warning on each query ranked with such vectors


class Similarity(StrEnum):
    """How the dense engine scores a query against a document (`?similarity=`)."""

    COSINE = "cosine"  # the vectors normalised here: cosine whatever the server returns
    DOT = "dot"  # the inner product of the vectors as served


SIMILARITIES = tuple(Similarity)


class Norms(TypedDict):
    min: float
    max: float


class DenseDescription(EncoderDescription, total=False):
    """The dense engine's `describe()`: its similarity and search, its encoder's, and the norms it was served."""

    similarity: Similarity
    search: str
    vectors_unit_length: bool | None
    vector_norms: Norms


class DenseEngine:
    """Exact search over the corpus vectors an embedding endpoint gave (the reference model in-process for
    `dense`), by `similarity`: "cosine" normalises corpus and query vectors here, so the arithmetic is cosine
    whatever the server returns; "dot" scores the vectors as served. The norms the server gave are recorded
    (describe) and vectors off unit length named on each query (`vectors-not-unit-length`). `per_query`: each
    query embedded and searched on its own (targets that name an endpoint), so its latency is real; otherwise
    all queries at once, with no latency of their own."""

    def __init__(
        self, encoder: Encoder, name: str = "dense", per_query: bool = False, similarity: str = Similarity.COSINE
    ):
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity {similarity!r}: one of {', '.join(SIMILARITIES)}")
        self.name = name
        self.encoder = encoder
        self.per_query = per_query
        self.similarity = Similarity(similarity)
        self._doc_ids: list[str] = []
        self.column: dict[str, int] = {}  # doc id -> its row in the index (corpus order)
        self._index = VectorIndex()
        self._norms: tuple[float, float] | None = None  # the least and greatest norm of the vectors served

    def _scored(self, vectors: np.ndarray) -> np.ndarray:
        """The served vectors as the index scores them (unit length for cosine), their norms noted."""
        if not len(vectors):
            return vectors
        norms = np.linalg.norm(vectors, axis=1)
        low, high = float(norms.min()), float(norms.max())
        self._norms = (low, high) if self._norms is None else (min(low, self._norms[0]), max(high, self._norms[1]))
        if self.similarity == Similarity.DOT or (abs(low - 1.0) <= ROUNDING and abs(high - 1.0) <= ROUNDING):
            return vectors  # unit length to float32's rounding already: dividing again would only move last bits
        # A zero vector stays zero (as torch's F.normalize leaves it): it scores 0 with everything.
        scaled: np.ndarray = vectors / np.maximum(norms, np.finfo(vectors.dtype).tiny)[:, None]
        return scaled

    @property
    def unit_length(self) -> bool | None:
        """Whether every vector served so far had unit length (None before any)."""
        if self._norms is None:
            return None
        return abs(self._norms[0] - 1.0) <= UNIT_TOLERANCE and abs(self._norms[1] - 1.0) <= UNIT_TOLERANCE

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self._doc_ids = list(dataset.corpus)
        self.column = {doc_id: i for i, doc_id in enumerate(self._doc_ids)}
        self._index.close()
        self._index = VectorIndex()
        self._norms = None
        advance = progress(f"{self.name}: encoding corpus", len(self._doc_ids))
        # Encoded and written in batches: the corpus' vectors are never all in memory at once.
        start = 0
        try:
            for start in range(0, len(self._doc_ids), INGEST_BATCH):
                batch = self._doc_ids[start : start + INGEST_BATCH]
                texts = [dataset.corpus[d].full_text for d in batch]
                self._index.append(self._scored(self.encoder.embed(texts, "ingest", advance, lengths=True)))
        except ServerError as exc:  # after the preflight: this target fails, the others still run
            done = start + self.encoder.finished[0]
            kept = "; those are cached" if self.encoder.cache is not None else ""  # --no-cache keeps none
            raise TargetFailed(f"{exc} (ingest stopped after {done} of {len(self._doc_ids)} texts{kept})", []) from None

    def _query_vectors(self, queries: dict[str, str], progress: ProgressFactory) -> np.ndarray:
        advance = progress(f"{self.name}: encoding queries", len(queries))
        # A query measured on its own is embedded now, never read from the cache: its latency is real.
        vectors = self.encoder.embed(list(queries.values()), "query_embed", advance, cached=not self.per_query)
        if len(vectors) and len(self._index) and vectors.shape[1] != self._index.dim:
            # Vectors of another model than the corpus' (the endpoint checks its own answers; the corpus' may
            # have come from the cache): no score between the two means anything.
            raise ServerError(
                self.encoder.endpoint.name,
                f"query vectors of dimension {vectors.shape[1]}, the corpus' have {self._index.dim}",
            )
        return self._scored(vectors)

    def cosines(
        self, queries: dict[str, str], doc_ids: list[list[str]], progress: ProgressFactory
    ) -> list[list[float]]:
        """Cosine of each query (dict order) with each of its documents, exactly as `search` scores them."""
        rows = np.array([row for row, ids in enumerate(doc_ids) for _ in ids], dtype=np.int64)
        columns = np.array([self.column[d] for ids in doc_ids for d in ids], dtype=np.int64)
        flat = self._index.scores_at(self._query_vectors(queries, progress), rows, columns).tolist()
        bounds = np.cumsum([0, *(len(ids) for ids in doc_ids)])
        return [flat[a:b] for a, b in itertools.pairwise(bounds)]

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.per_query:
            return one_by_one(self.name, lambda one, d: self._search(one, d, no_progress), queries, depth, progress)
        return self._search(queries, depth, progress)

    def _search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        qids = list(queries)
        embedding = self.encoder.meters.get("query_embed", EmbedMeter()).wall_s
        vectors = self._query_vectors(queries, progress)
        embed_ms = (self.encoder.meters["query_embed"].wall_s - embedding) * 1000.0
        top = self._index.search(vectors, depth)
        advance = progress(f"{self.name}: querying", len(qids))
        hits = [
            [Hit(self._doc_ids[i], float(s)) for i, s in zip(positions, scores)]
            for positions, scores in zip(top.positions, top.scores)
        ]
        advance(len(qids))
        results = batch_results(qids, hits)
        for result in results:
            if self.per_query:  # one query per call then: its embed time is its own
                result.parts_ms["embed_ms"] = embed_ms
            if self.unit_length is False:
                result.warnings.append(NOT_UNIT)
        return results

    def describe(self) -> DenseDescription:
        own: DenseDescription = {"similarity": self.similarity, "search": "exact"}
        described: DenseDescription = {**own, **self.encoder.describe()}
        if self._norms is not None:  # what the server gave, before any normalisation here
            described["vectors_unit_length"] = self.unit_length
            described["vector_norms"] = {"min": self._norms[0], "max": self._norms[1]}
        return described

    def cost_blocks(self) -> dict[str, CostBlock]:
        return self.encoder.blocks()

    def close(self) -> None:
        self._index.close()
        self.encoder.close()
