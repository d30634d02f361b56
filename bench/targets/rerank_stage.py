"""A rerank stage over any first stage (`RerankStage`), and queries searched one by one so each latency is its
own (`one_by_one`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypedDict

import numpy as np

from bench.core.errors import UserError
from bench.core.http import ServerUnreachable
from bench.core.progress import ProgressFactory
from bench.datasets.model import Dataset
from bench.endpoints.base import EndpointDescription, EndpointKind, Reranker
from bench.targets.base import Hit, QueryResult, Target, TargetDescription, TargetFailed, compose, no_progress
from bench.targets.embed_cost import CostBlock, Metered


def one_by_one(
    name: str,
    search: Callable[[dict[str, str], int], list[QueryResult]],
    queries: dict[str, str],
    depth: int,
    progress: ProgressFactory,
) -> list[QueryResult]:
    """Each query searched on its own, as a user's query is: its latency is its own, and `search_ms` is
    what is left of it after the parts measured where they happen (`embed_ms`, `rerank_ms`). A server that went
    away, this target's or any part's (whose own search ended: TargetFailed), ends the target at its first
    query without an answer, its finished queries kept: the others would each wait out the same timeout."""
    advance = progress(f"{name}: querying", len(queries))
    results: list[QueryResult] = []
    for qid, text in queries.items():
        started = time.perf_counter()
        try:
            [result] = search({qid: text}, depth)
        except (ServerUnreachable, TargetFailed) as exc:
            raise TargetFailed(str(exc), results) from None
        except UserError as exc:  # this query refused or answered wrongly: its own error, scored zero
            result = QueryResult(qid, [], None, error=str(exc))
        result.latency_s = time.perf_counter() - started
        measured = sum(v for k, v in result.parts_ms.items() if k != "search_ms")
        result.parts_ms["search_ms"] = max(0.0, result.latency_s * 1000.0 - measured)
        results.append(result)
        advance(1)
    return results


class NamedReranker(EndpointDescription, total=False):
    endpoint: str  # the spec's name


class RerankStageDescription(TypedDict, total=False):
    """The rerank stage's `describe()`: its first stage's, the depth, and the reranker (an in-process cross-encoder
    by its folder and hash, any other by its endpoint's description)."""

    first_stage: TargetDescription
    rerank_depth: int
    cross_encoder: str
    cross_encoder_fingerprint: str
    reranker: NamedReranker


class RerankStage:
    """Any first stage, then a rerank endpoint over each query's top `depth` documents (split into requests
    within the endpoint's limit by the endpoint client, merged exactly), the ranks below it kept in the first
    stage's order (`_tail`). A query the first stage failed, a
    rerank that fails, or one that answers fewer scores than documents sent, is that query's error (`compose`):
    it scores zero, never the first-stage order. A reranker that went away ends the target."""

    def __init__(self, first: Target, reranker: Reranker, depth: int, name: str, per_query: bool):
        self.name = name
        self.first = first
        self.reranker = reranker
        self.rerank_depth = depth
        self.per_query = per_query
        self._texts: dict[str, str] = {}

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self._texts = {doc_id: doc.full_text for doc_id, doc in dataset.corpus.items()}
        self.first.prepare(dataset, progress)

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.per_query:
            return one_by_one(self.name, lambda one, d: self._search(one, d, no_progress), queries, depth, progress)
        return self._search(queries, depth, progress)

    def _search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        try:
            first = self.first.search(queries, max(depth, self.rerank_depth), progress)
        except TargetFailed as exc:  # what the first stage finished is reranked too, never kept in its order
            finished = self._rerank_all([r.qid for r in exc.finished], queries, exc.finished, depth, progress)
            raise TargetFailed(str(exc), finished) from None
        return self._rerank_all(list(queries), queries, first, depth, progress)

    def _rerank_all(
        self, qids: list[str], queries: dict[str, str], first: list[QueryResult], depth: int, progress: ProgressFactory
    ) -> list[QueryResult]:
        advance = progress(f"{self.name}: reranking", len(qids))

        def rerank(qid: str, parts: dict[str, QueryResult]) -> QueryResult:
            result = parts["first stage"]
            start = time.perf_counter()
            reranked = self._rerank(queries[qid], result, depth)
            rerank_s = time.perf_counter() - start
            reranked.parts_ms["rerank_ms"] = rerank_s * 1000.0
            # Measured per query only when the first stage was: a rerank time alone is not a query's latency.
            reranked.latency_s = None if result.latency_s is None else result.latency_s + rerank_s
            return reranked

        results: list[QueryResult] = []
        try:
            for result in compose(qids, {"first stage": first}, rerank):
                results.append(result)
                advance(1)
        except ServerUnreachable as exc:  # the reranker went away: the target ends, its finished queries kept
            raise TargetFailed(str(exc), results) from None
        return results

    def _rerank(self, query: str, result: QueryResult, depth: int) -> QueryResult:
        candidates = result.hits[: self.rerank_depth]
        kept = QueryResult(result.qid, [], None, None, result.cost, result.warnings, parts_ms=dict(result.parts_ms))
        if not candidates:
            return kept
        try:
            scores = self.reranker.rerank(query, [self._texts[h.doc_id] for h in candidates])
        except ServerUnreachable:
            raise
        except UserError as exc:  # refused, or an answer of the wrong shape
            kept.error = f"rerank failed: {exc}"
            return kept
        if len(scores.order) != len(candidates) or np.isnan(scores.scores).any():
            got = len(scores.order)
            kept.error = f"rerank failed: {self.reranker.name}: {got} scores for {len(candidates)} documents"
            return kept
        head = [Hit(candidates[i].doc_id, float(scores.scores[i])) for i in scores.order]
        kept.hits = (head + _tail(result.hits[self.rerank_depth :], head))[:depth]
        return kept

    def describe(self) -> RerankStageDescription:
        stage: RerankStageDescription = {"first_stage": self.first.describe(), "rerank_depth": self.rerank_depth}
        described = self.reranker.describe()
        # an in-process cross-encoder: named by its folder and hash
        if described.get("kind") == EndpointKind.REFERENCE_RERANK:
            stage["cross_encoder"] = described.get("cross_encoder", "")
            stage["cross_encoder_fingerprint"] = described.get("cross_encoder_fingerprint", "")
        else:
            stage["reranker"] = {"endpoint": self.reranker.name, **described}
        return stage

    def cost_blocks(self) -> dict[str, CostBlock]:
        return self.first.cost_blocks() if isinstance(self.first, Metered) else {}

    def close(self) -> None:
        self.first.close()
        self.reranker.close()


def _tail(rest: list[Hit], head: list[Hit]) -> list[Hit]:
    """The first stage's documents below the rerank depth, in its order after the reranked head (PyTerrier's
    `% k >> reranker`, every TREC reranking run): a reranker changes the order of the top documents, never which
    documents a ranking holds, so R@100 of `x+rerank` is R@100 of `x`. Their scores continue below the head's
    lowest (head minimum − rank in the tail), so trec_eval's score order is this order."""
    floor = min((h.score for h in head if h.score is not None and math.isfinite(h.score)), default=0.0)
    return [Hit(h.doc_id, floor - rank) for rank, h in enumerate(rest, start=1)]
