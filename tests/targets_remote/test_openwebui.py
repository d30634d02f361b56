"""The `openwebui` target against a real Open WebUI 0.12.4 embedding through infinity (MiniLM)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from remote_helpers import judged, ndcg10, run_target, tiny_dataset

from bench.errors import ServerError
from bench.targets.base import no_progress
from bench.targets.openwebui import SETTINGS
from bench.targets.registry import TargetOptions, build_target, parse_spec
from tests.harness.process import free_port

pytestmark = pytest.mark.integration

KB = "ragbench-test-scifact-slice"
DEPTH = 10  # hybrid re-scores every candidate chunk through the embedder: keep k (2 × depth) small


@pytest.fixture(scope="module")
def admin(openwebui_server) -> httpx.Client:
    with httpx.Client(
        base_url=openwebui_server.url, headers={"Authorization": f"Bearer {openwebui_server.api_key}"}, timeout=60
    ) as client:
        yield client


def settings(admin: httpx.Client) -> dict[str, Any]:
    config = admin.get("/api/v1/retrieval/config").json()
    return {k: config[k] for k in SETTINGS}


@pytest.fixture(scope="module")
def vector_run(openwebui_server, scifact_slice, figures):
    """Ingest the slice once (into KB) and rank it with the vector variant."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENWEBUI_API_KEY", openwebui_server.api_key)
        results, described = run_target(f"openwebui:vector@{openwebui_server.url}?kb={KB}", scifact_slice, DEPTH)
    ingest = described["ingest"]
    figures.add("openwebui ingestion", f"{ingest['docs_per_s']} docs/s ({ingest['uploaded']} docs, "
                                       f"{ingest['seconds']:.0f} s, concurrency 4)")
    figures.latency("openwebui:vector query latency", results)
    return results, described


def test_vector_ranks_every_query_within_005_of_local_dense(vector_run, scifact_slice, figures):
    results, described = vector_run
    assert described["ingest"]["failed"] == 0
    assert described["ingest"]["uploaded"] == len(scifact_slice.corpus)
    assert {r.qid for r in results} == set(judged(scifact_slice))
    assert all(r.error is None and 0 < len(r.hits) <= DEPTH for r in results)
    assert all(len({h.doc_id for h in r.hits}) == len(r.hits) for r in results)  # first rank wins
    assert not any(r.warnings for r in results)

    dense = build_target(parse_spec("dense"), TargetOptions())
    dense.prepare(scifact_slice, no_progress)
    local = ndcg10(scifact_slice, dense.search(judged(scifact_slice), DEPTH, no_progress))
    remote = ndcg10(scifact_slice, results)
    figures.add("nDCG@10 on the slice", f"openwebui:vector {remote:.4f}, local dense {local:.4f}")
    assert remote == pytest.approx(local, abs=0.05)


def test_rerun_against_the_same_knowledge_base_adds_nothing(vector_run, openwebui_key, openwebui_server,
                                                            scifact_slice, admin):
    _, first = vector_run
    kb_id = first["knowledge_base"]["id"]
    before = admin.get(f"/api/v1/knowledge/{kb_id}/files", params={"limit": 1000}).json()["total"]
    results, again = run_target(f"openwebui:vector@{openwebui_server.url}?kb={KB}",
                                scifact_slice, DEPTH, queries={"q": "cancer"})
    assert again["knowledge_base"]["id"] == kb_id
    assert again["ingest"]["uploaded"] == 0
    assert again["ingest"]["already_present"] == len(scifact_slice.corpus)
    assert admin.get(f"/api/v1/knowledge/{kb_id}/files", params={"limit": 1000}).json()["total"] == before
    assert results[0].hits


@pytest.mark.parametrize("variant", ["hybrid", "rerank"])
def test_variant_ranks_every_query_and_restores_settings(variant, vector_run, openwebui_key, openwebui_server,
                                                         infinity_server, scifact_slice, admin, figures):
    before = settings(admin)
    # Two queries in flight: hybrid search rebuilds BM25 over the whole collection per query (seconds here).
    spec = f"openwebui:{variant}@{openwebui_server.url}?kb={KB}&bm25_weight=0.4&query_concurrency=2"
    if variant == "rerank":
        spec += f"&reranker_url={infinity_server.url}/rerank&reranker_model={infinity_server.rerank_model}"
    results, described = run_target(spec, scifact_slice, DEPTH)
    assert all(r.error is None and 0 < len(r.hits) <= DEPTH for r in results)
    assert len(results) == len(judged(scifact_slice))
    assert not any(r.warnings for r in results)
    assert described["settings_applied"]["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert described["settings_before"] == before  # what the results record is what was there
    assert settings(admin) == before
    figures.latency(f"openwebui:{variant} query latency (2 in flight)", results)
    figures.add(f"nDCG@10 openwebui:{variant}", f"{ndcg10(scifact_slice, results):.4f}")


def test_settings_are_restored_after_an_interrupt(vector_run, openwebui_key, openwebui_server, scifact_slice, admin):
    before = settings(admin)
    seen_during: dict[str, Any] = {}

    def interrupting(description: str, total: int | None):
        def advance(n: int) -> None:  # Ctrl-C in the middle of the search, settings changed
            seen_during.update(settings(admin))
            raise KeyboardInterrupt
        return advance

    with pytest.raises(KeyboardInterrupt):
        run_target(f"openwebui:hybrid@{openwebui_server.url}?kb={KB}&bm25_weight=0.9", scifact_slice, DEPTH,
                   queries={"q": "cancer"}, progress=interrupting)
    assert seen_during["HYBRID_BM25_WEIGHT"] == 0.9 and seen_during["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert settings(admin) == before


@pytest.mark.parametrize("endpoint", ["doc", "collection"])
def test_failing_reranker_is_detected_and_named(endpoint, vector_run, openwebui_key, openwebui_server,
                                                scifact_slice, admin):
    before = settings(admin)
    dead = f"http://127.0.0.1:{free_port()}/rerank"
    queries = dict(list(judged(scifact_slice).items())[:3])
    results, described = run_target(
        f"openwebui:rerank@{openwebui_server.url}?kb={KB}&endpoint={endpoint}&reranker_url={dead}&reranker_model=x",
        scifact_slice, DEPTH, queries=queries,
    )
    if endpoint == "doc":  # the silent fallback: a 200 with unscored results, more than asked for
        assert all({"null-scores", "more-results-than-asked"} <= set(r.warnings) for r in results)
        assert all(r.error is None for r in results)
    else:  # /query/collection refuses outright
        assert all(r.error and "reranker-error: HTTP 400" in r.error for r in results)
    assert settings(admin) == before


def test_embedder_failure_behind_a_200_upload_is_reported(openwebui_key, openwebui_server, admin):
    embedding = admin.get("/api/v1/retrieval/embedding").json()
    form = {k: embedding[k] for k in ("RAG_EMBEDDING_ENGINE", "RAG_EMBEDDING_MODEL", "RAG_EMBEDDING_BATCH_SIZE",
                                      "ENABLE_ASYNC_EMBEDDING", "RAG_EMBEDDING_CONCURRENT_REQUESTS", "openai_config")}
    broken = {**form, "openai_config": {**form["openai_config"], "url": f"http://127.0.0.1:{free_port()}"}}
    data = tiny_dataset("embedder-down", {"e1": "Photosynthesis in green plants.", "e2": "Volcanoes erupt lava."},
                        {"q": "plants"}, {"q": {"e1": 1}})
    try:
        assert admin.post("/api/v1/retrieval/embedding/update", json=broken).status_code == 200
        target = build_target(parse_spec(f"openwebui:vector@{openwebui_server.url}?kb=ragbench-test-embedder-down"),
                              TargetOptions())
        try:
            with pytest.raises(ServerError) as failure:
                target.prepare(data, no_progress)
        finally:
            target.close()
    finally:
        assert admin.post("/api/v1/retrieval/embedding/update", json=form).status_code == 200
    message = str(failure.value)
    assert "2 of 2 files failed processing" in message
    assert "knowledge base 'ragbench-test-embedder-down'" in message
    assert "2 file(s) uploaded" in message
    assert openwebui_server.api_key not in message


def test_identical_texts_are_uploaded_once_and_both_ranked(openwebui_key, openwebui_server):
    text = "Marie Curie studied radioactivity in Paris and won the Nobel Prize in Physics."
    data = tiny_dataset(
        "identical", {"a": text, "b": text, "c": "Mount Vesuvius buried Pompeii in 79 AD."},
        {"q": "Who studied radioactivity in Paris?"}, {"q": {"b": 1}},
    )
    results, described = run_target(f"openwebui:vector@{openwebui_server.url}?kb=ragbench-test-identical", data, 3)
    assert described["ingest"]["uploaded"] == 2
    assert described["corpus"]["identical_copies"] == 1
    assert described["corpus"]["identical_groups"] == {"a": ["b"]}
    assert [h.doc_id for h in results[0].hits][:2] == ["a", "b"]
