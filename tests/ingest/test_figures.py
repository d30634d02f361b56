"""The figures of an ingest combination from the meter's calls (busy share, peak in flight, texts per call,
refusals) and the recommendation over a sweep's combinations."""

from __future__ import annotations

import json

import pytest

from bench.endpoints.meter_calls import CallRecord, SentRequest
from bench.ingest.calls import busy_seconds, by_route, peak_in_flight
from bench.ingest.recommend import recommend
from bench.ingest.record import Combination, DocsOutcome, doc_latency_ms, point_record
from bench.results.schema import IngestPointRecord


def call(start: float, seconds: float, status: int | None = 200, texts: int | None = 1, route: str = "embedding"):
    return CallRecord(route, start, seconds, status, texts, False, None)


def test_busy_time_is_the_union_of_the_calls_and_peak_counts_overlaps():
    calls = [call(0.0, 1.0), call(0.5, 1.0), call(3.0, 0.5), call(3.1, 0.1)]
    assert busy_seconds(calls) == pytest.approx(2.0)
    assert peak_in_flight(calls) == 2
    assert peak_in_flight([call(0.0, 1.0), call(1.0, 1.0)]) == 1  # one ends as the next starts
    assert busy_seconds([]) == 0.0 and peak_in_flight([]) == 0


def test_route_figures_count_refusals_texts_and_busy_share():
    calls = [call(0.0, 1.0, texts=8), call(0.0, 1.0, status=429, texts=8), call(2.0, 1.0, texts=3)]
    calls.append(call(0.0, 0.5, texts=None, route="llm"))
    routes = by_route(calls, wall_s=4.0)
    embedding = routes["embedding"]
    assert embedding.by_status == {"ok": 2, "429": 1}
    assert (embedding.texts, embedding.texts_per_call_max) == (19, 8)
    assert embedding.texts_per_call_mean == pytest.approx(19 / 3)
    assert embedding.busy_fraction == pytest.approx(0.5) and embedding.peak_in_flight == 2
    assert routes["llm"].texts_per_call_mean is None


def test_a_p99_needs_a_hundred_documents():
    assert set(doc_latency_ms([0.1] * 99)) == {"p50", "n"}
    assert set(doc_latency_ms([0.1] * 100)) == {"p50", "p99", "n"}
    assert doc_latency_ms([]) == {"n": 0}


def point(label: str, docs_per_s: float, calls: int, lost: int = 0, refused: int = 0) -> IngestPointRecord:
    made = [call(float(i), 0.5) for i in range(calls)] + [call(0.0, 0.1, status=429) for _ in range(refused)]
    lost_ids = [f"d{i}" for i in range(lost)]
    seconds = 100 / docs_per_s
    outcome = DocsOutcome(100 + lost, {}, lost_ids, seconds, [])
    return point_record(Combination("t", "openwebui", {}, label), outcome, made, None, None, 1)


def test_the_recommendation_is_the_gentlest_within_ten_percent_of_the_fastest():
    sweep = [point("a", 10.0, calls=300), point("b", 9.5, calls=20), point("c", 6.0, calls=10)]
    summary = recommend("t", sweep)
    assert summary.recommended == "b"
    assert "within 10% of the fastest (a: 10.0 docs/s" in summary.reason


def test_lost_documents_or_refusals_rule_a_combination_out():
    sweep = [point("fast-but-lossy", 20.0, calls=10, lost=3), point("refused", 15.0, calls=10, refused=2)]
    sweep.append(point("clean", 5.0, calls=50))
    summary = recommend("t", sweep)
    assert summary.recommended == "clean" and "fastest of the 1 combination(s)" in summary.reason
    assert "2 lost documents or met refusals" in summary.reason
    none = recommend("t", sweep[:2])
    assert none.recommended is None and none.reason.startswith("no combination ingested every document")


def test_chunks_are_the_distinct_texts_embedded_less_the_apps_own():
    """Open WebUI embeds a knowledge base's name and description when it makes the base: no chunk of a document."""

    def embedded(*texts: str) -> CallRecord:
        body = json.dumps({"input": list(texts)}).encode()
        sent = SentRequest("POST", "", (), body)
        return CallRecord("embedding", 0.0, 0.1, 200, len(texts), False, None, request=sent)

    made = [embedded("kb\n\nabout"), embedded("one chunk", "two\nchunk"), embedded("one chunk", "two chunk")]
    outcome = DocsOutcome(2, {}, [], 1.0, [])
    which = Combination("t", "openwebui", {}, "x")
    assert point_record(which, outcome, made, None, "kb", 1).chunks == 3
    assert point_record(which, outcome, made, None, "kb", 1, frozenset({"kb\n\nabout"})).chunks == 2
