"""`quality --background` on the real Open WebUI 0.12.4 `rerank` variant: its external reranker (a loopback
fixture, tests/quality/underload_fixture.py) answers HTTP 429 above two requests in flight, and the background
stream is sent to that same reranker, so Open WebUI's own rerank calls find it full.

What Open WebUI does with the 429 (read in its source, `retrieval/models/external.py` and `retrieval/utils.py`,
and asserted here): `ExternalReranker.predict` logs the error and returns no scores, and the rerank step then
returns the fused BM25 + vector candidates unscored. `/query/doc` answers 200 with that order and `null` scores
(the silent fallback: no error from Open WebUI, which ragbench counts as the query's error all the same: a failed
part fails its query, never the other part alone); `/query/collection` fails sorting the `null` scores and answers
400, which ragbench counts as the query's error too (class 4xx: the user never sees a 429).
"""

from __future__ import annotations

import pytest

from bench.core.errors import MeasurementFailed
from bench.results.store import Results, read_results
from tests.quality.underload_fixture import TOPICS, OverloadedReranker, ndcg_at_10, write_marked_queries

pytestmark = pytest.mark.integration

NDCG = "ndcg_cut_10"
RATE = 120  # requests/s; with 0.5 s per answer the stream offers 60 requests' work for 2 slots: full ~97% of the time
# The stream's own requests are refused too (what is measured): any share of 429s is the load asked for.
BACKGROUND = f"rr@rate={RATE}&duration=3s&warmup=0.5s&max_error_rate=1"


@pytest.fixture
def reranker():
    server = OverloadedReranker(max_inflight=2, service_ms=500).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    return write_marked_queries(tmp_path_factory.mktemp("marked"))


def _quality(dataset, out, target, reranker, background=None) -> Results:
    return ndcg_at_10(dataset, out, [target], f"rr=cohere@{reranker.url}?model=oracle", background)


def _target(server, reranker, endpoint: str) -> str:
    return (
        f"owui=openwebui:rerank@{server.url}?kb=ragbench-test-reranker-429&endpoint={endpoint}"
        f"&reranker_url={reranker.url}/rerank&reranker_model=oracle"
    )


def test_reranker_429s_under_load_fail_query_doc_queries_that_open_webui_answers_unreranked(
    openwebui_key, openwebui_server, reranker, marked, tmp_path, figures
):
    target = _target(openwebui_server, reranker, "doc")
    plain = _quality(marked, tmp_path / "plain", target, reranker)
    assert not reranker.refused  # one query at a time: the reranker never full
    assert plain.metric("owui", NDCG).mean == 1.0  # the oracle reranker puts every relevant document first
    with pytest.raises(MeasurementFailed, match=f"target owui@bg{RATE}: .* queries failed"):
        _quality(marked, tmp_path / "bg", target, reranker, BACKGROUND)
    loaded = read_results(tmp_path / "bg" / "results.jsonl")
    idle, busy = "owui@bg0", f"owui@bg{RATE}"
    # Rate 0 is a plain run: every query's nDCG the same, exactly.
    assert loaded.metric(idle, NDCG).per_query == plain.metric("owui", NDCG).per_query
    assert not any(q.error or q.warnings for q in loaded.queries if q.target == idle)
    assert reranker.refused["python-requests"] > 0  # Open WebUI's own rerank calls were refused under load
    queries = [q for q in loaded.queries if q.target == busy]
    assert len(queries) == len(TOPICS)
    # Open WebUI answered 200 with the unreranked candidates and null scores: each such query is an error.
    fell_back = {q.qid for q in queries if q.error and "null scores" in q.error}
    assert len(fell_back) >= 2 * len(queries) // 3
    after = loaded.metric(busy, NDCG).per_query
    assert all(after[qid] == 0.0 for qid in fell_back)  # scored zero, never as the fused order
    (comparison,) = loaded.comparisons
    assert comparison.p_randomization_holm < 0.01
    (point,) = loaded.load_points
    assert point.endpoint == "rr" and point.requests.errors.get("429", 0) > 0 and point.requests.ok > 0
    # The report names the cause of each changed query.
    report = (tmp_path / "bg" / "report.md").read_text()
    qid = sorted(fell_back)[0]
    (row,) = [line for line in report.splitlines() if line.startswith(f"| {RATE} | {qid} | 1.0000 | 0.0000 | error: ")]
    assert "reranker-error: " in row and "null scores" in row, row
    figures.add(
        f"openwebui:rerank /query/doc, reranker 429 above 2 in flight, background {RATE}/s",
        f"nDCG@10 idle {loaded.metric(idle, NDCG).mean:.4f} -> loaded {loaded.metric(busy, NDCG).mean:.4f} "
        f"(Holm p {comparison.p_randomization_holm:.4f}); {len(fell_back)} of {len(queries)} queries answered "
        f"unreranked with null scores, each the query's error; Open WebUI's rerank calls refused "
        f"{reranker.refused['python-requests']}, answered {reranker.answered['python-requests']}",
    )


def test_reranker_429s_under_load_fail_query_collection_queries(
    openwebui_key, openwebui_server, reranker, marked, tmp_path, figures
):
    target = _target(openwebui_server, reranker, "collection")
    with pytest.raises(MeasurementFailed, match=f"target owui@bg{RATE}: .* queries failed"):
        _quality(marked, tmp_path / "bg", target, reranker, BACKGROUND)
    loaded = read_results(tmp_path / "bg" / "results.jsonl")
    idle, busy = "owui@bg0", f"owui@bg{RATE}"
    assert loaded.metric(idle, NDCG).mean == 1.0
    assert not any(q.error or q.warnings for q in loaded.queries if q.target == idle)
    failed = [q for q in loaded.queries if q.target == busy and q.error]
    assert len(failed) >= 2 * len(TOPICS) // 3
    assert all("reranker-error: HTTP 400" in q.error for q in failed)
    assert all(loaded.metric(busy, NDCG).per_query[q.qid] == 0.0 for q in failed)  # a failed query scores 0
    report = (tmp_path / "bg" / "report.md").read_text()
    assert f"| {len(failed)} (4xx: {len(failed)}) |" in report  # errors by class: Open WebUI's 400, not the 429
    figures.add(
        f"openwebui:rerank /query/collection, reranker 429 above 2 in flight, background {RATE}/s",
        f"{len(failed)} of {len(TOPICS)} queries failed (HTTP 400 from Open WebUI), nDCG@10 idle "
        f"{loaded.metric(idle, NDCG).mean:.4f} -> loaded {loaded.metric(busy, NDCG).mean:.4f}; Open WebUI's rerank "
        f"calls refused {reranker.refused['python-requests']}, answered {reranker.answered['python-requests']}",
    )
