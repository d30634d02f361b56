"""One answer validation per wire (`bench.endpoints.base.vectors_of` / `scores_of`), used by every command:
shape, count, finite numbers, one stable dimension, a score per document. Every failure is a WireShapeError,
which the API clients turn into one line (exit 2) and the load generator counts as `bad_response`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.endpoints.base import WireShapeError
from bench.endpoints.cohere import CohereRerankWire
from bench.endpoints.openai import OpenAIEmbedWire
from bench.endpoints.tei import TeiEmbedWire, TeiRerankWire

NAN = float("nan")
BAD_VECTORS = [
    ([[NAN, 0.5]], "finite"),
    ([[math.inf, 0.5]], "finite"),
    ([[1e39, 0.5]], "finite"),  # beyond float32
    ([[]], "non-zero dimension"),
    ([["a", "b"]], "other than numbers"),
    ([[0.5, None]], "other than numbers"),
    ([[True, 0.5]], "other than numbers"),  # JSON true beside numbers: numpy alone reads it as 1.0
    ([[0.25, False], [0.5, 0.5]], "other than numbers"),
    ([[1, True]], "other than numbers"),
    ([[0.5, 0.5], [0.5]], "one dimension"),
    ([[[0.5]]], "vectors"),
    ([0.5], r"\[\[float\]\]|embedding"),
]


def _tei(rows):
    return TeiEmbedWire("http://127.0.0.1:9", {}), rows


def _openai(rows):
    return OpenAIEmbedWire("http://127.0.0.1:9/v1", "m"), {
        "data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]
    }


@pytest.mark.parametrize("make", [_tei, _openai], ids=["tei", "openai"])
@pytest.mark.parametrize("rows, says", BAD_VECTORS, ids=[repr(r) for r, _ in BAD_VECTORS])
def test_embed_answers_with_wrong_content_are_shape_errors(make, rows, says):
    wire, answer = make(rows)
    with pytest.raises(WireShapeError, match=says):
        wire.parse(answer, len(rows))


@pytest.mark.parametrize("make", [_tei, _openai], ids=["tei", "openai"])
def test_a_dimension_that_changes_between_answers_is_a_shape_error(make):
    wire, first = make([[0.5, 0.5, 0.5, 0.5]])
    assert wire.parse(first, 1).shape == (1, 4)
    _, second = make([[0.5, 0.5, 0.5, 0.5, 0.5]])
    with pytest.raises(WireShapeError, match="dimension 4"):
        wire.parse(second, 1)


def test_good_answers_still_parse():
    wire, answer = _openai([[1, 2.5], [3, 4]])
    vectors = wire.parse(answer, 2)
    assert vectors.dtype == np.float32 and vectors.tolist() == [[1.0, 2.5], [3.0, 4.0]]
    _, exact = _openai([[1.0, 0.0], [0, 1]])  # exact 0 and 1 as numbers are numbers
    assert wire.parse(exact, 2).tolist() == [[1.0, 0.0], [0.0, 1.0]]


BAD_SCORES = [
    ([(0, NAN), (1, 0.5)], "finite number"),
    ([(0, "high"), (1, 0.5)], "finite number"),
    ([(0, True), (1, 0.5)], "finite number"),
    ([(0, 0.9), (0, 0.5)], "once"),
    ([(0, 0.9), (2, 0.5)], "once"),
    ([(0, 0.9)], "each of 2 documents"),
    ([(0, 0.9), (1, 0.5), (1, 0.4)], "each of 2 documents"),
]


@pytest.mark.parametrize("pairs, says", BAD_SCORES, ids=[repr(p) for p, _ in BAD_SCORES])
def test_rerank_answers_need_a_finite_score_for_each_document(pairs, says):
    tei = TeiRerankWire("http://127.0.0.1:9", {})
    cohere = CohereRerankWire("http://127.0.0.1:9/v1", None)
    with pytest.raises(WireShapeError, match=says):
        tei.parse([{"index": i, "score": s} for i, s in pairs], 2)
    with pytest.raises(WireShapeError, match=says):
        cohere.parse({"results": [{"index": i, "relevance_score": s} for i, s in pairs]}, 2)


def test_top_n_asks_for_at_least_that_many_scores():
    cohere = CohereRerankWire("http://127.0.0.1:9/v1", None)
    answer = {"results": [{"index": 1, "relevance_score": 0.9}]}
    assert cohere.parse(answer, 3, top_n=1) == [(1, 0.9)]
    ignored = {"results": [{"index": i, "relevance_score": 0.1 * i} for i in range(3)]}
    assert len(cohere.parse(ignored, 3, top_n=1)) == 3  # top_n ignored: identity's finding, not a broken answer
    with pytest.raises(WireShapeError, match="1 to 3 documents"):
        cohere.parse({"results": []}, 3, top_n=1)
