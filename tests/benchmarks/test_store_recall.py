"""benchmarks/store_recall.py: an index's answer scored against the exact top k over the same vectors (issue 47),
on a few vectors made here."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.store_recall import cosine_distances, tie_recall, vector_recall

# Five unit vectors in the plane: the query (1, 0) is nearest to a, then b and c (equally near), then d, then e.
IDS = ["a", "b", "c", "d", "e"]
VECTORS = np.array(
    [[1.0, 0.0], [0.8, 0.6], [0.8, -0.6], [0.0, 1.0], [-1.0, 0.0]],
    dtype=np.float32,
)
QUERY = np.array([[1.0, 0.0]], dtype=np.float32)


def test_tie_recall_counts_the_rows_as_close_as_the_exact_kth() -> None:
    assert tie_recall([0.1, 0.2, 0.5], [0.1, 0.2, 0.3], tie=1e-5) == pytest.approx(2 / 3)
    # a row a rounding away from the k-th is one of the k nearest: ties count as found
    assert tie_recall([0.1, 0.2, 0.300001], [0.1, 0.2, 0.3], tie=1e-5) == pytest.approx(1.0)
    assert tie_recall([0.1], [0.1, 0.2, 0.3], tie=1e-5) == pytest.approx(1 / 3)  # a short answer finds less


def test_cosine_distances_are_one_minus_cosine_and_a_zero_row_is_far() -> None:
    rows = np.array([[2.0, 0.0], [0.0, 3.0], [0.0, 0.0]], dtype=np.float32)
    got = cosine_distances(rows, np.array([1.0, 0.0], dtype=np.float32))
    assert got == pytest.approx([0.0, 1.0, 1.0], abs=1e-6)


def test_vector_recall_against_the_exact_top_k() -> None:
    exact = [["a", "b"]]
    assert vector_recall(IDS, VECTORS, QUERY, exact, k=2) == (pytest.approx(1.0), 0)
    # c is as near as b, the exact 2nd: an index that returns it instead missed nothing
    assert vector_recall(IDS, VECTORS, QUERY, [["c", "a"]], k=2) == (pytest.approx(1.0), 0)
    # d instead of b or c: one of the two nearest missed
    assert vector_recall(IDS, VECTORS, QUERY, [["a", "d"]], k=2) == (pytest.approx(0.5), 0)


def test_vector_recall_counts_short_answers_and_averages_queries() -> None:
    queries = np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    recall, short = vector_recall(IDS, VECTORS, queries, [["a", ""], ["e", "d"]], k=2)
    assert short == 1  # "" pads an answer with fewer than k ids
    assert recall == pytest.approx((0.5 + 1.0) / 2)  # the second query: e, then d, both found
