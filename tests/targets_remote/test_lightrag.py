"""The `lightrag` target against a real LightRAG 1.5.7 whose LLM is the deterministic double, its
embeddings and reranks served by infinity, every provider call passing through `ragbench meter`."""

from __future__ import annotations

import httpx
import pytest
from remote_helpers import judged, ndcg10, run_target, tiny_dataset

from bench.meter import MeterClient
from bench.targets.lightrag import MODES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def ingested(lightrag_server, meter_url, scifact_slice, figures):
    """Insert the slice once (metered); every later run finds the documents already there."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIGHTRAG_API_KEY", lightrag_server.api_key)
        results, described = run_target(f"lightrag:naive@{lightrag_server.url}?meter={meter_url}",
                                        scifact_slice, 10, queries={})
    ingest = described["ingest"]
    figures.add("lightrag ingestion", f"{ingest['docs_per_s']} docs/s ({ingest['inserted']} docs, "
                                      f"{ingest['seconds']:.0f} s; LLM calls {ingest['cost']['llm_calls']}, "
                                      f"LLM tokens {ingest['cost']['llm_total_tokens']})")
    return described


def test_ingest_processes_every_document_and_reports_its_cost(ingested, scifact_slice):
    ingest = ingested["ingest"]
    assert ingest["inserted"] == ingest["processed"] == len(scifact_slice.corpus)
    assert ingest["failed"] == {}
    # MAX_GLEANING=0: one extraction call per chunk (a few abstracts exceed one 1200-token chunk),
    # plus a description summary where an entity recurs.
    assert ingest["cost"]["llm_calls"] >= len(scifact_slice.corpus)
    assert ingest["cost"]["embedding_calls"] > 0
    assert ingested["server_version"]["core_version"] == "1.5.7"
    assert ingested["health"]["configuration"]["llm_model"] == "llm-double"


RERANK_QUERIES = 6  # LightRAG re-scores every retrieved chunk (often 40+) on a CPU cross-encoder: keep it short


@pytest.mark.parametrize(
    # Rerank on: one mode proves the wiring (each graph-mode query re-scores 40+ chunks on CPU, ~5-12 s here).
    ("mode", "rerank"), [(mode, "off") for mode in MODES] + [("naive", "on")]
)
def test_every_mode_ranks_every_query_with_its_cost(mode, rerank, ingested, lightrag_server, lightrag_key,
                                                      meter_url, llm_double, scifact_slice, figures):
    queries = judged(scifact_slice)
    if rerank == "on":
        queries = dict(list(queries.items())[:RERANK_QUERIES])
    double_before = llm_double.totals()
    results, described = run_target(
        f"lightrag:{mode}@{lightrag_server.url}?meter={meter_url}&rerank={rerank}", scifact_slice, 10, queries
    )
    double_after = llm_double.totals()
    assert described["ingest"]["inserted"] == 0  # already there: nothing inserted twice
    assert {r.qid for r in results} == set(queries)
    assert all(r.error is None for r in results)
    # Every query is answered; an empty ranking is LightRAG's "no results" (its cosine threshold, 0.2,
    # drops weak matches of the double's keywords), allowed for a few queries in the graph modes only.
    empty = sum(1 for r in results if not r.hits)
    assert empty == 0 if mode == "naive" else empty <= len(results) // 10, f"{empty} empty rankings"
    assert all(len(r.hits) <= 10 and len({h.doc_id for h in r.hits}) == len(r.hits) for r in results)
    # What the meter charged to the queries is exactly what the LLM double was sent.
    assert sum(r.cost["llm_calls"] for r in results) == double_after["calls"] - double_before["calls"]
    assert sum(r.cost["llm_prompt_tokens"] for r in results) == (
        double_after["prompt_tokens"] - double_before["prompt_tokens"])
    assert sum(r.cost["llm_completion_tokens"] for r in results) == (
        double_after["completion_tokens"] - double_before["completion_tokens"])
    # The reranker is called exactly when the variant asks for it.
    reranks = sum(r.cost["rerank_calls"] for r in results)
    assert (reranks >= len(results)) if rerank == "on" else (reranks == 0)
    label = f"lightrag:{mode}" + ("?rerank=on" if rerank == "on" else "")
    figures.latency(f"{label} query latency", results)
    calls = sum(r.cost["llm_calls"] for r in results) / len(results)
    tokens = sum(r.cost["llm_total_tokens"] for r in results) / len(results)
    if rerank == "off":
        figures.add(f"{label} nDCG@10", f"{ndcg10(scifact_slice, results):.4f}")
    figures.add(f"{label} LLM cost", f"{calls:.2f} calls, {tokens:.0f} tokens per query; {empty} empty rankings")


def test_meter_totals_match_what_the_llm_double_was_sent(ingested, meter_url, llm_double):
    meter = MeterClient(meter_url)
    try:
        usage = meter.snapshot()["llm"]
    finally:
        meter.close()
    sent = llm_double.totals()
    assert sent["calls"] > 0
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (
        sent["calls"], sent["prompt_tokens"], sent["completion_tokens"])
    assert usage.errors == 0 and usage.calls_without_usage == 0


def test_no_results_is_an_empty_ranking_not_an_error(ingested, lightrag_server, lightrag_key, scifact_slice):
    nonsense = "zq xv pbt qq"
    failures = []
    for mode in MODES:
        raw = httpx.post(f"{lightrag_server.url}/query/data", headers={"X-API-Key": lightrag_server.api_key},
                         json={"query": nonsense, "mode": mode, "chunk_top_k": 10, "enable_rerank": False},
                         timeout=60)
        assert raw.status_code == 200
        results, _ = run_target(f"lightrag:{mode}@{lightrag_server.url}", scifact_slice, 10,
                                queries={"nonsense": nonsense})
        assert results[0].error is None, mode
        if raw.json()["status"] == "failure":  # LightRAG's "no results"
            failures.append(mode)
            assert results[0].hits == [], mode
        else:  # graph modes can still match an entity above the cosine threshold
            assert results[0].hits, mode
    assert "naive" in failures  # no abstract lies near the nonsense: the no-results path was exercised


def test_cleanup_deletes_what_ragbench_inserted_and_only_that(ingested, lightrag_server, lightrag_key,
                                                               scifact_slice):
    text = "Grace Hopper created the first compiler at Remington Rand; COBOL grew out of her work."
    data = tiny_dataset(
        "cleanup", {"hopper/1": text, "hopper 2": text, "ada": "Ada Lovelace wrote the first published algorithm for Babbage's engine."},
        {"q": "Who created the first compiler?"}, {"q": {"hopper 2": 1}},
    )
    headers = {"X-API-Key": lightrag_server.api_key}

    def paths() -> set[str]:
        found: set[str] = set()
        page = 1
        while True:
            body = httpx.post(f"{lightrag_server.url}/documents/paginated", headers=headers,
                              json={"page": page, "page_size": 200, "sort_field": "id"}, timeout=30).json()
            found |= {d["file_path"] for d in body["documents"]}
            if not body["pagination"]["has_next"]:
                return found
            page += 1

    before = paths()
    results, described = run_target(f"lightrag:naive@{lightrag_server.url}?cleanup=true", data, 3)
    # Identical texts: inserted once, both ids ranked together; names made basename-safe and unique.
    assert described["corpus"]["identical_copies"] == 1
    assert described["ingest"]["inserted"] == described["ingest"]["processed"] == 2
    assert [h.doc_id for h in results[0].hits][:2] == ["hopper/1", "hopper 2"]
    assert described["cleanup"]["deleted"] == 2
    assert paths() == before
