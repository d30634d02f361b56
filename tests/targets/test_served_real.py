"""Served retrieval against real servers: infinity-emb serving MiniLM and the stand-in cross-encoder, LiteLLM in
front. The same model served must give the same quality as in-process, through either path."""

from __future__ import annotations

import numpy as np
import pytest

from bench.datasets import load_dataset
from bench.datasets.sample import sample_dataset
from bench.endpoints import parse_endpoint_spec
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import run_from_results
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.models import reranker_standin_path
from tests.paths import scifact as scifact_path

NDCG10 = parse_measure("nDCG@10")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def small():
    return sample_dataset(load_dataset(scifact_path(), split="train"), max_queries=20, max_docs=200, seed=3)


def _rank(dataset, spec: str, endpoints: list[str] = (), **options):
    specs = {e.name: e for e in map(parse_endpoint_spec, endpoints)}
    target = build_target(parse_target_spec(spec), TargetOptions(endpoints=specs, cache=False, **options))
    try:
        target.prepare(dataset, no_progress)
        results = target.search({q: dataset.queries[q] for q in dataset.judged_queries()}, 100, no_progress)
    finally:
        target.close()
    run, _ = run_from_results(results)
    return results, evaluate(dataset.qrels, run, [NDCG10], complete=True).means[NDCG10.trec_name]


def _overlap(a, b) -> float:
    return float(
        np.mean([len({h.doc_id for h in x.hits[:10]} & {h.doc_id for h in y.hits[:10]}) / 10 for x, y in zip(a, b)])
    )


def test_dense_through_infinity_and_litellm_equals_in_process_dense(small, infinity_server, litellm_server):
    local, expected = _rank(small, "dense")
    for endpoint in (
        f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}",
        f"inf=openai@{litellm_server.url}/v1?model={litellm_server.embed_model}&key_env={litellm_server.key_env}",
    ):
        served, ndcg = _rank(small, "dense?embedder=inf", [endpoint])
        # The figures docs/benchmarks.md quotes (issue 16's target: equal to 4 decimals in float32); -s shows them.
        print(
            f"{endpoint.split('@')[1]}: nDCG@10 served {ndcg:.6f}, in-process {expected:.6f}, top-10 overlap "
            f"{_overlap(served, local):.4f}"
        )
        assert abs(ndcg - expected) <= 0.002 and _overlap(served, local) >= 0.95, endpoint
        assert all(r.error is None and r.latency_s and r.parts_ms["embed_ms"] > 0 for r in served)


def test_rerank_through_infinity_equals_the_local_cross_encoder(small, infinity_server):
    # 10 of the 20 queries over the same 200 documents: the cross-encoder scores each query's 20 candidates twice
    # (locally, then served), which is most of this test's time; the same 0.002 on a mean of 10 is the stricter bound.
    fewer = sample_dataset(small, max_queries=10, seed=3)
    _, expected = _rank(fewer, "bm25+rerank", cross_encoder=str(reranker_standin_path()), rerank_depth=20)
    endpoint = f"inf-rr=cohere@{infinity_server.url}?model={infinity_server.rerank_model}"
    served, ndcg = _rank(fewer, "bm25+rerank?reranker=inf-rr", [endpoint], rerank_depth=20)
    print(f"bm25+rerank nDCG@10 served {ndcg:.6f}, local cross-encoder {expected:.6f}")
    assert abs(ndcg - expected) <= 0.002
    assert all(r.error is None and r.parts_ms["rerank_ms"] > 0 for r in served)
