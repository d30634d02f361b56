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


@pytest.mark.parametrize("rerank", ["off", "on"])
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_ranks_every_query_with_its_cost(mode, rerank, ingested, lightrag_server, lightrag_key,
                                                      meter_url, llm_double, scifact_slice, figures):
    queries = judged(scifact_slice)
    double_before = llm_double.totals()
    results, described = run_target(
        f"lightrag:{mode}@{lightrag_server.url}?meter={meter_url}&rerank={rerank}", scifact_slice, 10
    )
    double_after = llm_double.totals()
    assert described["ingest"]["inserted"] == 0  # already there: nothing inserted twice
    assert {r.qid for r in results} == set(queries)
    assert all(r.error is None for r in results)
    ranked = [r for r in results if r.hits]
    assert len(ranked) == len(results), f"{len(results) - len(ranked)} queries without a ranking"
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
    figures.latency(f"lightrag:{mode}?rerank={rerank} query latency", results)
    calls = sum(r.cost["llm_calls"] for r in results) / len(results)
    tokens = sum(r.cost["llm_total_tokens"] for r in results) / len(results)
    figures.add(f"lightrag:{mode}?rerank={rerank}",
                f"nDCG@10 {ndcg10(scifact_slice, results):.4f}; LLM {calls:.2f} calls, {tokens:.0f} tokens per query")


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
    for mode in MODES:
        results, _ = run_target(f"lightrag:{mode}@{lightrag_server.url}", scifact_slice, 10,
                                queries={"nonsense": "zzqx wvvk plorbt"})
        assert results[0].error is None and results[0].hits == [], mode


def test_cleanup_deletes_what_ragbench_inserted_and_only_that(ingested, lightrag_server, lightrag_key,
                                                               scifact_slice):
    text = "Grace Hopper created the first compiler at Remington Rand; COBOL grew out of her work."
    data = tiny_dataset(
        "cleanup", {"hopper/1": text, "hopper 2": text, "amazon": "The Amazon river flows through Brazil and Peru."},
        {"q": "Who created the first compiler?"}, {"q": {"hopper 2": 1}},
    )
    headers = {"X-API-Key": lightrag_server.api_key}

    def paths() -> set[str]:
        body = httpx.post(f"{lightrag_server.url}/documents/paginated", headers=headers,
                          json={"page": 1, "page_size": 200, "sort_field": "id"}, timeout=30).json()
        assert not body["pagination"]["has_next"]
        return {d["file_path"] for d in body["documents"]}

    before = paths()
    results, described = run_target(f"lightrag:naive@{lightrag_server.url}?cleanup=true", data, 3)
    # Identical texts: inserted once, both ids ranked together; names made basename-safe and unique.
    assert described["corpus"]["identical_copies"] == 1
    assert described["ingest"]["inserted"] == described["ingest"]["processed"] == 2
    assert [h.doc_id for h in results[0].hits][:2] == ["hopper/1", "hopper 2"]
    assert described["cleanup"]["deleted"] == 2
    assert paths() == before
