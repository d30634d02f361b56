"""The `lightrag` target against a real LightRAG 1.5.7 whose LLM is the deterministic double, its
embeddings and reranks served by infinity, every provider call passing through `ragbench meter`."""

from __future__ import annotations

import httpx
import pytest
from remote_helpers import judged, lightrag_paths, ndcg10, run_target, tiny_dataset

from bench.endpoints.meter import MeterClient
from bench.targets.base import no_progress
from bench.targets.lightrag import CACHE_WARNING, Mode
from bench.targets.registry import TargetOptions, build_target, parse_target_spec

pytestmark = pytest.mark.integration


# Its claims here are per document and per query (processed, answered, costs as metered); its nDCG is a figure.
@pytest.fixture(scope="module")
def ingested(lightrag_server, meter_url, scifact_slice, figures):
    """Insert the slice once (metered); every later run finds the documents already there."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIGHTRAG_API_KEY", lightrag_server.api_key)
        _results, described = run_target(
            f"lightrag:naive@{lightrag_server.url}?meter={meter_url}", scifact_slice, 10, queries={}
        )
    ingest = described["ingest"]
    figures.add(
        "lightrag ingestion",
        f"{ingest['docs_per_s']} docs/s ({ingest['inserted']} docs, "
        f"{ingest['seconds']:.0f} s; LLM calls {ingest['cost']['llm_calls']}, "
        f"LLM tokens {ingest['cost']['llm_total_tokens']})",
    )
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
    ("mode", "rerank"),
    [(mode, "off") for mode in Mode] + [("naive", "on")],
)
def test_every_mode_ranks_every_query_with_its_cost(
    mode, rerank, ingested, lightrag_server, lightrag_key, meter_url, llm_double, scifact_slice, figures
):
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
        double_after["prompt_tokens"] - double_before["prompt_tokens"]
    )
    assert sum(r.cost["llm_completion_tokens"] for r in results) == (
        double_after["completion_tokens"] - double_before["completion_tokens"]
    )
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
        sent["calls"],
        sent["prompt_tokens"],
        sent["completion_tokens"],
    )
    assert usage.errors == 0 and usage.calls_without_usage == 0


def test_no_results_is_an_empty_ranking_not_an_error(ingested, lightrag_server, lightrag_key, scifact_slice):
    nonsense = "zq xv pbt qq"
    failures = []
    for mode in Mode:
        raw = httpx.post(
            f"{lightrag_server.url}/query/data",
            headers={"X-API-Key": lightrag_server.api_key},
            json={"query": nonsense, "mode": mode, "chunk_top_k": 10, "enable_rerank": False},
            timeout=60,
        )
        assert raw.status_code == 200
        results, _ = run_target(
            f"lightrag:{mode}@{lightrag_server.url}", scifact_slice, 10, queries={"nonsense": nonsense}
        )
        assert results[0].error is None, mode
        if raw.json()["status"] == "failure":  # LightRAG's "no results"
            failures.append(mode)
            assert results[0].hits == [], mode
        else:  # graph modes can still match an entity above the cosine threshold
            assert results[0].hits, mode
    assert "naive" in failures  # no abstract lies near the nonsense: the no-results path was exercised


def test_cleanup_deletes_what_ragbench_inserted_and_only_that(ingested, lightrag_server, lightrag_key, scifact_slice):
    text = "Grace Hopper created the first compiler at Remington Rand; COBOL grew out of her work."
    data = tiny_dataset(
        "cleanup",
        {
            "hopper/1": text,
            "hopper 2": text,
            "ada": "Ada Lovelace wrote the first published algorithm for Babbage's engine.",
        },
        {"q": "Who created the first compiler?"},
        {"q": {"hopper 2": 1}},
    )
    before = lightrag_paths(lightrag_server.url, lightrag_server.api_key)
    results, described = run_target(f"lightrag:naive@{lightrag_server.url}?cleanup=true", data, 3)
    # Identical texts: inserted once, both ids ranked together; names made basename-safe and unique.
    assert described["corpus"]["identical_copies"] == 1
    assert described["ingest"]["inserted"] == described["ingest"]["processed"] == 2
    assert [h.doc_id for h in results[0].hits][:2] == ["hopper/1", "hopper 2"]
    assert described["cleanup"]["deleted"] == 2
    assert lightrag_paths(lightrag_server.url, lightrag_server.api_key) == before


def test_llm_cache_setting_is_recorded_and_costs_it_served_are_flagged(
    lightrag_server, lightrag_key, meter_url, figures
):
    """LightRAG caches keyword extraction per query and mode (ENABLE_LLM_CACHE, on by default): asked again, a
    graph-mode query costs no LLM call. The results must say so instead of reporting a free query."""
    queries = {
        "c1": "Which proteins regulate apoptosis in tumour cells?",
        "c2": "How does vitamin D supplementation change bone density?",
    }
    data = tiny_dataset(
        "cache",
        {
            "p": "Caspase proteins regulate apoptosis in tumour cells.",
            "v": "Vitamin D supplementation raised bone density in older women.",
        },
        queries,
        {"c1": {"p": 1}, "c2": {"v": 1}},
    )
    target = build_target(
        parse_target_spec(f"lightrag:local@{lightrag_server.url}?meter={meter_url}&cleanup=true"), TargetOptions()
    )
    try:
        target.prepare(data, no_progress)
        first = target.search(queries, 10, no_progress)
        again = target.search(queries, 10, no_progress)
    finally:
        target.close()
    described = target.describe()
    assert described["llm_cache"]["enabled"] is True
    assert described["health"]["configuration"]["enable_llm_cache"] is True
    assert all(r.error is None and r.cost["llm_calls"] >= 1 and CACHE_WARNING not in r.warnings for r in first)
    assert all(r.error is None and r.cost["llm_calls"] == 0 and CACHE_WARNING in r.warnings for r in again)
    figures.add(
        "lightrag:local LLM calls per query, first ask vs asked again (cache on)",
        f"{sum(r.cost['llm_calls'] for r in first) / 2:.1f} vs {sum(r.cost['llm_calls'] for r in again) / 2:.1f}",
    )


def test_documents_spanning_several_chunks_still_fill_depth(lightrag_server, lightrag_key):
    """Two long documents of several chunks each rank first: asking for `depth` chunks would return fewer
    than `depth` documents; the target asks for more until it has them."""
    glacier = (
        "Alpine glaciers retreat as summer temperatures rise; meltwater from the Rhone glacier feeds "
        "the river and ice thickness falls every decade in the Swiss Alps. "
    )
    texts = {
        "long-a": glacier * 160,
        "long-b": glacier.replace("Rhone", "Aletsch") * 160,
        "short-c": "Glacier meltwater in the Alps changes river flow in spring.",
        "short-d": "Ice thickness of Swiss glaciers is measured by radar every year.",
        "short-e": "Summer heat in the Alps speeds up glacier retreat, say Swiss surveys.",
    }
    data = tiny_dataset(
        "chunks", texts, {"q": "How fast do Alpine glaciers retreat and lose ice thickness?"}, {"q": {"long-a": 1}}
    )
    depth = 4
    target = build_target(parse_target_spec(f"lightrag:naive@{lightrag_server.url}?cleanup=true"), TargetOptions())
    try:
        target.prepare(data, no_progress)
        (result,) = target.search(data.queries, depth, no_progress)
        # The precondition, on the server itself: `depth` chunks hold fewer than `depth` documents.
        raw = httpx.post(
            f"{lightrag_server.url}/query/data",
            headers={"X-API-Key": lightrag_server.api_key},
            timeout=60,
            json={"query": data.queries["q"], "mode": "naive", "chunk_top_k": depth, "enable_rerank": False},
        ).json()
    finally:
        target.close()
    assert len({chunk["file_path"] for chunk in raw["data"]["chunks"]}) < depth
    assert result.error is None and len(result.hits) == depth, result.hits
    assert {h.doc_id for h in result.hits[:2]} == {"long-a", "long-b"}
    assert target.describe()["cleanup"]["deleted"] == 5
