"""Local engines on real data: BM25 reference figure, dense against direct encoding, fusion, rerank, cache."""

import numpy as np
import pytest

from bench.datasets import load_dataset
from bench.datasets.sample import sample_dataset
from bench.endpoints.reference import CrossEncoderScorer, ReferenceEmbedder, SentenceTransformerEmbedder
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import run_from_results
from bench.targets.base import Hit, QueryResult, no_progress
from bench.targets.bm25_engine import BM25Engine
from bench.targets.dense_engine import DenseEngine
from bench.targets.encoder import Encoder
from bench.targets.local import RRF_K, HybridEngine
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.models import reranker_standin_path
from tests.paths import scifact as scifact_path

NDCG10 = parse_measure("nDCG@10")


@pytest.fixture(scope="module")
def scifact():
    return load_dataset(scifact_path(), split="train")


@pytest.fixture(scope="module")
def small(scifact):
    return sample_dataset(scifact, max_queries=40, max_docs=300, seed=1)


def ndcg(dataset, target, depth=100):
    target.prepare(dataset, no_progress)
    queries = {q: dataset.queries[q] for q in dataset.judged_queries()}
    run, _ = run_from_results(target.search(queries, depth, no_progress))
    return evaluate(dataset.qrels, run, [NDCG10], complete=True).means[NDCG10.trec_name]


def test_bm25_on_full_scifact_train_matches_the_reference_figure(scifact):
    # Measured independently with bm25s + Snowball + English stopwords: 0.696 (shared/datasets/README.md).
    assert ndcg(scifact, BM25Engine()) == pytest.approx(0.696, abs=0.02)


def test_bm25_does_not_retrieve_documents_without_a_matching_term(small):
    engine = BM25Engine()
    engine.prepare(small, no_progress)
    [result] = engine.search({"x": "zzzzqqq unmatched"}, 100, no_progress)
    assert result.hits == []


@pytest.mark.slow
def test_dense_ranking_equals_direct_cosine_of_the_reference_model(scifact):
    # 100 documents make the claim as well as 300: each is embedded twice here (engine, then sentence-transformers)
    small = sample_dataset(scifact, max_queries=5, max_docs=100, seed=1)
    reference = ReferenceEmbedder("dense")
    embedder = reference.embedder
    engine = DenseEngine(Encoder(reference))
    engine.prepare(small, no_progress)
    qids = small.judged_queries()[:5]
    results = engine.search({q: small.queries[q] for q in qids}, 10, no_progress)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(embedder.model_path), device="cpu")
    ids = list(small.corpus)
    docs = model.encode([small.corpus[i].full_text for i in ids], normalize_embeddings=True)
    for result in results:
        q = model.encode([small.queries[result.qid]], normalize_embeddings=True)[0]
        expected = [ids[i] for i in np.argsort(-(docs @ q))[:10]]
        assert [h.doc_id for h in result.hits] == expected


@pytest.mark.slow
def test_second_encoding_comes_from_the_cache_without_loading_the_model(small):
    texts = [d.full_text for d in list(small.corpus.values())[:20]]
    first = SentenceTransformerEmbedder().embed(texts)
    again = SentenceTransformerEmbedder()
    vectors = again.embed(texts)
    assert again._model is None
    np.testing.assert_array_equal(first, vectors)


@pytest.mark.slow
def test_dense_and_hybrid_beat_nothing_and_hybrid_is_close_to_its_parts(small):
    bm25, dense = ndcg(small, BM25Engine()), ndcg(small, DenseEngine(Encoder(ReferenceEmbedder("dense"))))
    hybrid = ndcg(small, build_target(parse_target_spec("hybrid"), TargetOptions()))
    assert 0.5 < dense <= 1 and 0.5 < bm25 <= 1
    assert hybrid >= min(bm25, dense) - 0.05


class FixedEngine:
    """A first stage with a fixed ranking, to check the fusion arithmetic."""

    def __init__(self, ranking):
        self.name, self.ranking = "fixed", ranking

    def prepare(self, dataset, progress):
        pass

    def search(self, queries, depth, progress):
        return [
            QueryResult(q, [Hit(d, 1.0 / (i + 1)) for i, d in enumerate(self.ranking)][:depth], 0.0) for q in queries
        ]

    def describe(self):
        return {}

    def close(self):
        pass


def test_weighted_fusion_is_open_webuis_weighted_reciprocal_rank():
    hybrid = HybridEngine(FixedEngine(["a", "b", "c"]), FixedEngine(["c", "d"]), bm25_weight=0.3, name="h")
    [result] = hybrid.search({"q": "?"}, 10, no_progress)
    scores = {h.doc_id: h.score for h in result.hits}
    assert scores["c"] == pytest.approx(0.3 / (RRF_K + 3) + 0.7 / (RRF_K + 1))
    assert scores["a"] == pytest.approx(0.3 / (RRF_K + 1))
    assert scores["d"] == pytest.approx(0.7 / (RRF_K + 2))
    assert [h.doc_id for h in result.hits] == ["c", "d", "a", "b"]


def test_weight_one_is_pure_lexical_order():
    hybrid = HybridEngine(FixedEngine(["a", "b"]), FixedEngine(["b", "z"]), bm25_weight=1.0, name="h")
    [result] = hybrid.search({"q": "?"}, 10, no_progress)
    assert [h.doc_id for h in result.hits] == ["a", "b"]


@pytest.mark.slow
def test_rerank_stage_orders_by_the_cross_encoder(small):
    model = reranker_standin_path()
    target = build_target(parse_target_spec("bm25+rerank"), TargetOptions(cross_encoder=str(model), rerank_depth=20))
    target.prepare(small, no_progress)
    qid = small.judged_queries()[0]
    [result] = target.search({qid: small.queries[qid]}, 10, no_progress)
    first = BM25Engine()
    first.prepare(small, no_progress)
    [candidates] = first.search({qid: small.queries[qid]}, 20, no_progress)
    scores = CrossEncoderScorer(model).score(
        small.queries[qid], [small.corpus[h.doc_id].full_text for h in candidates.hits]
    )
    expected = [candidates.hits[i].doc_id for i in np.argsort(-scores, kind="stable")[:10]]
    assert [h.doc_id for h in result.hits] == expected
    assert target.name == "bm25+rerank"


@pytest.mark.slow
def test_openwebui_variant_reorders_the_fused_union_by_cosine_so_mid_weights_do_not_matter(small):
    queries = {q: small.queries[q] for q in small.judged_queries()[:8]}
    rankings = {}
    for weight in ("0.3", "0.7"):
        target = build_target(parse_target_spec(f"hybrid:openwebui?bm25_weight={weight}"), TargetOptions())
        target.prepare(small, no_progress)
        rankings[weight] = [[h.doc_id for h in r.hits] for r in target.search(queries, 20, no_progress)]
    assert rankings["0.3"] == rankings["0.7"]
    lexical, dense = BM25Engine(), DenseEngine(Encoder(ReferenceEmbedder("dense")))
    lexical.prepare(small, no_progress)
    dense.prepare(small, no_progress)
    embedder, ids = SentenceTransformerEmbedder(), list(small.corpus)
    cosines = embedder.embed(list(queries.values())) @ embedder.embed([small.corpus[d].full_text for d in ids]).T
    for row, (lex, den, got) in enumerate(
        zip(lexical.search(queries, 20, no_progress), dense.search(queries, 20, no_progress), rankings["0.3"])
    ):
        union = {h.doc_id for h in lex.hits} | {h.doc_id for h in den.hits}
        expected = sorted(union, key=lambda d: -cosines[row, ids.index(d)])[:20]
        assert got == expected
