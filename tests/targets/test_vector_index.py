"""The on-disk indexes: chunked exact search equals search over the whole matrix (bit for bit, ties included, where
the products are exact; in ranking and scores within float32 rounding otherwise, whatever the CPU's BLAS); the
dense engine's similarity is what it says; BM25 mmap."""

import zlib
from collections import Counter

import numpy as np
import pytest

from bench.datasets.model import Dataset, Document
from bench.endpoints.base import Embeddings
from bench.targets.base import no_progress
from bench.targets.bm25_engine import BM25Engine
from bench.targets.dense_engine import DenseEngine
from bench.targets.encoder import Encoder
from bench.targets.local import HybridEngine
from bench.targets.vector_index import VectorIndex

pytestmark = pytest.mark.usefixtures("cache_dir")


def corpus_with_ties(seed=0, n=3000, dim=16, integers=False):
    """Values rounded to one decimal and repeated rows: many equal scores, also at the top-k boundary. With
    `integers` the values are small integers instead, so every product and partial sum is exact in float32
    (|sum| < 2**24) and no BLAS summation order changes a bit: ties are then exact ties on every CPU."""
    rng = np.random.default_rng(seed)

    def values(shape):
        return np.round(rng.standard_normal(shape) * 3) if integers else np.round(rng.standard_normal(shape), 1)

    docs = values((n, dim)).astype(np.float32)
    docs[500:560] = docs[3]
    docs[2000:2100] = docs[1500]
    queries = values((40, dim)).astype(np.float32)
    return docs, np.vstack([queries, docs[[3, 1500]]])


def exact_order(scores, k):
    """Score descending, then corpus position ascending, over the full matrix."""
    return [np.lexsort((np.arange(len(row)), -row))[:k] for row in scores]


# BLAS sums float32 products in blocks that depend on the CPU and the matrix shape: two paths agree within this.
RTOL, ATOL = 1e-5, 1e-5


def assert_same_ranking(positions, scores, row, k):
    """`positions`/`scores` rank `row` (the whole-matrix scores of one query) as exact search does, up to float32
    rounding: each score is the document's own within tolerance, and the document at each rank scores as the exact
    order's document at that rank, so only documents within rounding of each other can have swapped."""
    expected = exact_order(row[None, :], k)[0]
    assert len(positions) == len(expected) == len(set(positions.tolist()))
    np.testing.assert_allclose(scores, row[positions], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(row[positions], row[expected], rtol=RTOL, atol=ATOL)
    # The index's own order: its scores descending, its ties by position, exactly (no arithmetic in between).
    assert [(-s, p) for s, p in zip(scores, positions)] == sorted((-s, p) for s, p in zip(scores, positions))


def filled(docs, batch=333, **options):
    index = VectorIndex(**options)
    for start in range(0, len(docs), batch):
        index.append(docs[start : start + batch])
    return index


@pytest.mark.parametrize("window_rows", [None, 256, 999, 3000])
@pytest.mark.parametrize("k", [1, 100, 5000])
def test_chunked_search_equals_the_full_matrix_with_ties_by_position_where_products_are_exact(window_rows, k):
    docs, queries = corpus_with_ties(integers=True)
    assert np.array_equal(docs, np.round(docs)) and np.abs(docs).max() * np.abs(queries).max() * docs.shape[1] < 2**24
    full = queries @ docs.T
    top = filled(docs, window_rows=window_rows).search(queries, k)
    assert top.positions.shape == (len(queries), min(k, len(docs)))
    # The corpus really has ties: inside the returned lists, or at their boundary (equal scores left out).
    assert any(len(np.unique(s)) < len(s) or (row >= s[-1]).sum() > len(s) for row, s in zip(full, top.scores))
    for row, expected in enumerate(exact_order(full, k)):
        np.testing.assert_array_equal(top.positions[row], expected)
        np.testing.assert_array_equal(top.scores[row], full[row, expected])  # exact arithmetic: the same bits


@pytest.mark.parametrize("window_rows", [None, 256, 999, 3000])
@pytest.mark.parametrize("k", [1, 100, 5000])
def test_chunked_search_ranks_rounded_products_as_the_full_matrix_within_float_tolerance(window_rows, k):
    docs, queries = corpus_with_ties()
    full = queries @ docs.T
    top = filled(docs, window_rows=window_rows).search(queries, k)
    for row, scores in enumerate(full):
        assert_same_ranking(top.positions[row], top.scores[row], scores, k)


def test_depth_zero_returns_empty_rankings():
    docs, queries = corpus_with_ties()
    top = filled(docs, window_rows=256).search(queries, 0)
    assert top.positions.shape == top.scores.shape == (len(queries), 0)


def test_without_ties_the_order_is_the_earlier_engines_argpartition_order():
    # What DenseEngine did before the index: the whole matrix, argpartition, then a stable argsort.
    rng = np.random.default_rng(1)
    docs, queries = rng.standard_normal((5000, 32)).astype(np.float32), rng.standard_normal((25, 32)).astype(np.float32)
    full = queries @ docs.T
    top = filled(docs, window_rows=700).search(queries, 100)
    for row, scores in enumerate(full):
        best = np.argpartition(-scores, 99)[:100]
        best = best[np.argsort(-scores[best], kind="stable")]
        np.testing.assert_allclose(top.scores[row], scores[best], rtol=RTOL, atol=ATOL)
        # Gaussian scores: positions differ only where two scores lie within float32 rounding of each other.
        differ = top.positions[row] != best
        np.testing.assert_allclose(scores[top.positions[row][differ]], scores[best[differ]], rtol=RTOL, atol=ATOL)


def test_scores_at_pairs_are_the_search_scores():
    docs, queries = corpus_with_ties(seed=2)
    full = queries @ docs.T
    rng = np.random.default_rng(3)
    rows, positions = rng.integers(0, len(queries), 700), rng.integers(0, len(docs), 700)
    index = filled(docs, window_rows=400)
    got = index.scores_at(queries, rows, positions)
    np.testing.assert_allclose(got, full[rows, positions], rtol=RTOL, atol=ATOL)
    # The same queries, the same windows: the very scores `search` ranked by.
    top = index.search(queries, 50)
    again = index.scores_at(queries, np.repeat(np.arange(len(queries)), 50), top.positions.ravel())
    np.testing.assert_array_equal(again, top.scores.ravel())


def test_float16_storage_searches_the_rounded_vectors():
    docs, queries = corpus_with_ties(seed=4)
    top = filled(docs, dtype="float16", window_rows=512).search(queries, 50)
    rounded = queries @ docs.astype(np.float16).astype(np.float32).T
    for row, scores in enumerate(rounded):
        assert_same_ranking(top.positions[row], top.scores[row], scores, 50)


def test_the_vector_file_has_no_name_and_is_gone_after_close(cache_dir):
    index = filled(np.ones((10, 4), dtype=np.float32))
    assert len(index) == 10 and list((cache_dir / "indexes").iterdir()) == []
    index.close()
    assert index.search(np.ones((1, 4), dtype=np.float32), 5).positions.shape == (1, 0)


def test_non_finite_vectors_are_refused():
    index = VectorIndex()
    with pytest.raises(ValueError, match="NaN"):
        index.append(np.array([[1.0, np.nan]], dtype=np.float32))
    index.append(np.ones((2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="dimensions"):
        index.append(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        index.search(np.array([[np.inf, 0.0]], dtype=np.float32), 1)


class TableEmbedder:
    """Deterministic vectors per text, counted, so engines are tested without a model; `endpoint()` serves them
    as an embedding endpoint to the dense engine's Encoder."""

    def __init__(self, dim=8, norms="as-drawn"):
        self.dim, self.calls = dim, []
        self.norms = norms  # "as-drawn" (not unit length), "unit", or "scaled": each text's vector times 1 to 5

    def endpoint(self):
        table = self

        class Endpoint:
            name, events = "table", Counter()

            def embed(self, texts):
                return Embeddings(table.embed(texts), [])

            def request_batch(self):
                return 1_000_000  # one request per ingest batch: the engine's batches are what is counted

            def default_concurrency(self):
                return 1

            def cache_key(self):
                return "table"

            def describe(self):
                return table.describe()

            def close(self):
                pass

        return Encoder(Endpoint(), cache=False)

    def vector(self, text):
        rng = np.random.default_rng(zlib.crc32(text.encode()))
        vector = np.round(rng.standard_normal(self.dim), 1).astype(np.float32)
        if self.norms == "unit":
            return vector / np.linalg.norm(vector)
        return vector * (1 + zlib.crc32(text.encode()) % 5) if self.norms == "scaled" else vector

    def embed(self, texts, advance=lambda n: None):
        self.calls.append(len(texts))
        advance(len(texts))
        return np.vstack([self.vector(t) for t in texts])

    def describe(self):
        return {"model": "table"}


def tiny_dataset(n=60):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    corpus = {f"d{i}": Document(f"d{i}", "", " ".join(words[j % 6] for j in range(i % 5, i % 5 + 3))) for i in range(n)}
    queries = {"q1": "alpha beta", "q2": "gamma", "q3": "zeta epsilon delta"}
    return Dataset("tiny", corpus, queries, {"q1": {"d1": 1}}, source="memory", format="jsonl")


def test_dense_engine_writes_the_corpus_in_batches_and_ranks_by_the_full_matrix(monkeypatch):
    monkeypatch.setattr("bench.targets.dense_engine.INGEST_BATCH", 16)
    dataset, embedder = tiny_dataset(), TableEmbedder()
    engine = DenseEngine(embedder.endpoint())
    engine.prepare(dataset, no_progress)
    assert embedder.calls == [16, 16, 16, 12]
    results = engine.search(dataset.queries, 20, no_progress)
    ids = list(dataset.corpus)
    docs = unit(np.vstack([embedder.vector(dataset.corpus[d].full_text) for d in ids]))
    full = unit(np.vstack([embedder.vector(q) for q in dataset.queries.values()])) @ docs.T
    for result, row in zip(results, full):
        positions = np.array([ids.index(h.doc_id) for h in result.hits])
        assert_same_ranking(positions, np.array([h.score for h in result.hits]), row, 20)
    engine.close()


def unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _ranked(norms, similarity="cosine"):
    dataset, embedder = tiny_dataset(), TableEmbedder(norms=norms)
    engine = DenseEngine(embedder.endpoint(), similarity=similarity)
    engine.prepare(dataset, no_progress)
    results = engine.search(dataset.queries, 20, no_progress)
    engine.close()
    ids = list(dataset.corpus)
    docs = np.vstack([embedder.vector(dataset.corpus[d].full_text) for d in ids])
    queries = np.vstack([embedder.vector(q) for q in dataset.queries.values()])
    return results, engine.describe(), ids, docs, queries


def test_cosine_is_cosine_whatever_norms_the_server_gives_and_the_record_says_so():
    unit_results, unit_config, _, _, _ = _ranked("unit")
    assert unit_config["similarity"] == "cosine" and unit_config["vectors_unit_length"] is True
    assert not any(r.warnings for r in unit_results)
    for norms in ("as-drawn", "scaled"):  # a server that does not normalise, with norms from about 1 to 15
        results, config, ids, docs, queries = _ranked(norms)
        assert config["similarity"] == "cosine" and config["vectors_unit_length"] is False
        low, high = config["vector_norms"]["min"], config["vector_norms"]["max"]
        assert 0 < low < high and high > 1 + 0.5
        assert all(r.warnings == ["vectors-not-unit-length"] for r in results)
        full = unit(queries) @ unit(docs).T
        for result, same, row in zip(results, unit_results, full):
            positions = np.array([ids.index(h.doc_id) for h in result.hits])
            assert_same_ranking(positions, np.array([h.score for h in result.hits]), row, 20)
            np.testing.assert_allclose(
                [h.score for h in result.hits], [h.score for h in same.hits], rtol=RTOL, atol=ATOL
            )


def test_dot_similarity_is_the_inner_product_of_the_vectors_as_served_and_labelled_so():
    results, config, ids, docs, queries = _ranked("scaled", similarity="dot")
    assert config["similarity"] == "dot" and config["vectors_unit_length"] is False
    for result, row in zip(results, queries @ docs.T):
        positions = np.array([ids.index(h.doc_id) for h in result.hits])
        assert_same_ranking(positions, np.array([h.score for h in result.hits]), row, 20)


def test_similarity_parameter_takes_cosine_or_dot_only():
    from bench.core.errors import UserError
    from bench.targets.base import TargetOptions
    from bench.targets.registry import build_target, parse_target_spec

    for spec in ("dense?similarity=euclid", "hybrid:weighted?similarity=l2"):
        with pytest.raises(UserError, match=r"similarity=.* is not one of cosine, dot"):
            build_target(parse_target_spec(spec), TargetOptions())


def test_openwebui_hybrid_rescores_the_fused_candidates_by_their_exact_cosines():
    dataset, embedder = tiny_dataset(), TableEmbedder()
    dense = DenseEngine(embedder.endpoint())
    engine = HybridEngine(BM25Engine(), dense, 0.5, name="h", rescore_by_dense=True)
    engine.prepare(dataset, no_progress)
    results = engine.search(dataset.queries, 10, no_progress)
    ids = list(dataset.corpus)
    # The cosines of the queries × corpus matrix (the table's vectors are not unit length: the engine normalises).
    docs = unit(embedder.embed([dataset.corpus[d].full_text for d in ids]))
    full = unit(embedder.embed(list(dataset.queries.values()))) @ docs.T
    for result, row in zip(results, full):
        got = [h.score for h in result.hits]
        np.testing.assert_allclose(got, [row[ids.index(h.doc_id)] for h in result.hits], rtol=RTOL, atol=ATOL)
        assert got == sorted(got, reverse=True)
    engine.close()


def test_bm25_served_from_the_memory_mapped_index_equals_the_in_memory_index():
    import bm25s

    dataset = tiny_dataset(200)
    engine = BM25Engine()
    engine.prepare(dataset, no_progress)
    assert isinstance(engine._retriever.scores["data"], np.memmap)
    in_memory = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    in_memory.index(engine._tokenize([d.full_text for d in dataset.corpus.values()], True), show_progress=False)
    tokens = engine._tokenize(list(dataset.queries.values()), return_ids=False)
    expected = in_memory.retrieve(tokens, k=50, show_progress=False, n_threads=1)
    got = engine._retriever.retrieve(tokens, k=50, show_progress=False, n_threads=1)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
