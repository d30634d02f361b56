"""The `openwebui` target against a real Open WebUI 0.12.4 embedding through infinity (MiniLM)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

import httpx
import pytest
from remote_helpers import judged, ndcg10, run_target, tiny_dataset

from bench.core.errors import ServerError
from bench.targets.base import QueryResult, no_progress
from bench.targets.openwebui_settings import SETTINGS
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.process import free_port
from tests.harness.stubs import JsonStub, RawBody, Seen, Whole

pytestmark = pytest.mark.integration

KB = "ragbench-test-scifact-slice"
DEPTH = 10  # hybrid re-scores every candidate chunk through the embedder: keep k (2 × depth) small


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
    figures.add(
        "openwebui ingestion",
        f"{ingest['docs_per_s']} docs/s ({ingest['uploaded']} docs, {ingest['seconds']:.0f} s, concurrency 4)",
    )
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

    dense = build_target(parse_target_spec("dense"), TargetOptions())
    dense.prepare(scifact_slice, no_progress)
    local = ndcg10(scifact_slice, dense.search(judged(scifact_slice), DEPTH, no_progress))
    remote = ndcg10(scifact_slice, results)
    figures.add("nDCG@10 on the slice", f"openwebui:vector {remote:.4f}, local dense {local:.4f}")
    assert remote == pytest.approx(local, abs=0.05)


def test_rerun_against_the_same_knowledge_base_adds_nothing(
    vector_run, openwebui_key, openwebui_server, scifact_slice, admin
):
    _, first = vector_run
    kb_id = first["knowledge_base"]["id"]
    before = admin.get(f"/api/v1/knowledge/{kb_id}/files", params={"limit": 1000}).json()["total"]
    results, again = run_target(
        f"openwebui:vector@{openwebui_server.url}?kb={KB}", scifact_slice, DEPTH, queries={"q": "cancer"}
    )
    assert again["knowledge_base"]["id"] == kb_id
    assert again["ingest"]["uploaded"] == 0
    assert again["ingest"]["already_present"] == len(scifact_slice.corpus)
    assert admin.get(f"/api/v1/knowledge/{kb_id}/files", params={"limit": 1000}).json()["total"] == before
    assert results[0].hits


HYBRID_WEIGHT = 0.4
# The rerank variant's claims are per query (ranked, no warning) and the settings restored; its nDCG is the
# stand-in reranker's, no quality claim. Each query re-scores its candidates on a CPU cross-encoder (~6 s here
# with 2 in flight): a few queries prove the wiring. Hybrid ranks every query: the agreement test needs them all.
RERANK_QUERIES = 8


def variant_run(variant, openwebui_server, infinity_server, scifact_slice, admin):
    """(results, described, settings before, settings after) of one variant over the slice's queries (the
    first RERANK_QUERIES of them for rerank)."""
    before = settings(admin)
    queries = judged(scifact_slice)
    if variant == "rerank":
        queries = dict(list(queries.items())[:RERANK_QUERIES])
    # Two queries in flight: hybrid search rebuilds BM25 over the whole collection per query (seconds here).
    spec = f"openwebui:{variant}@{openwebui_server.url}?kb={KB}&bm25_weight={HYBRID_WEIGHT}&query_concurrency=2"
    if variant == "rerank":  # the stand-in cross-encoder on shared CPUs can take longer than Open WebUI's 30 s
        spec += (
            f"&reranker_url={infinity_server.url}/rerank&reranker_model={infinity_server.rerank_model}"
            "&reranker_timeout=180"
        )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENWEBUI_API_KEY", openwebui_server.api_key)
        results, described = run_target(spec, scifact_slice, DEPTH, queries)
    return results, described, before, settings(admin)


@pytest.fixture(scope="module")
def hybrid_run(vector_run, openwebui_server, infinity_server, scifact_slice, admin):
    return variant_run("hybrid", openwebui_server, infinity_server, scifact_slice, admin)


# Each variant's run is an argument, not a fixture looked up inside a parametrized test: pytest orders tests by the
# fixtures they name, and a module fixture only looked up inside one ran twice (2 × 126 s of hybrid queries).
def test_hybrid_ranks_every_query_and_restores_settings(hybrid_run, scifact_slice, figures):
    check_variant_run("hybrid", hybrid_run, scifact_slice, figures)


def test_rerank_ranks_every_query_and_restores_settings(
    vector_run, openwebui_server, infinity_server, scifact_slice, admin, figures
):
    run = variant_run("rerank", openwebui_server, infinity_server, scifact_slice, admin)
    check_variant_run("rerank", run, scifact_slice, figures)


def check_variant_run(variant, run, scifact_slice, figures):
    results, described, before, after = run
    assert all(r.error is None and 0 < len(r.hits) <= DEPTH for r in results)
    asked = RERANK_QUERIES if variant == "rerank" else len(judged(scifact_slice))
    assert len({r.qid for r in results}) == len(results) == asked
    assert not any(r.warnings for r in results), [(r.qid, r.warnings) for r in results if r.warnings]
    assert described["settings_applied"]["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert described["settings_before"] == before  # what the results record is what was there
    assert after == before
    figures.latency(f"openwebui:{variant} query latency (2 in flight)", results)
    asked_only = replace(scifact_slice, qrels={r.qid: scifact_slice.qrels[r.qid] for r in results})
    figures.add(f"nDCG@10 openwebui:{variant}", f"{ndcg10(asked_only, results):.4f} ({len(results)} queries)")


def top10_agreement(a: list[QueryResult], b: list[QueryResult]) -> tuple[float, float]:
    """(mean share of the top 10 that both rankings hold, share of queries with the same top 10 in the same order)."""
    top = {r.qid: [h.doc_id for h in r.hits[:10]] for r in b}
    pairs = [([h.doc_id for h in r.hits[:10]], top[r.qid]) for r in a]
    shared = [len(set(x) & set(y)) / 10 for x, y in pairs]
    return sum(shared) / len(shared), sum(x == y for x, y in pairs) / len(pairs)


def test_local_hybrid_openwebui_agrees_with_the_real_server(hybrid_run, vector_run, scifact_slice, figures):
    """`hybrid:openwebui` (bench/targets/local.py) against Open WebUI's own hybrid search, same weight, same
    candidate depth (the server is asked for 2 × depth chunks per retriever; the local engine takes as many
    documents per retriever), same embedding model (MiniLM, served by infinity to the server).

    The re-creation's claim: without an external reranker, Open WebUI re-scores the fused candidates by
    embedding cosine, so its order is the dense order — the server's hybrid ranking must hold the same top 10
    as its own vector ranking. Server and local engine still differ in what they embed: the server embeds
    chunks of CHUNK_SIZE (1000) characters and a document takes its best chunk's score, the local engine
    embeds each whole document (MiniLM reads its first 256 tokens); a SciFact abstract is ~1,500 characters.
    That difference is all the bounds below allow for. Measured here (40 queries): the server's hybrid top 10
    equals its vector top 10 for every query (overlap 1.000, same order 1.000); local vs server mean overlap
    0.740 on the 300-document slice (2026-11-30, nDCG@10 local 0.8323 vs server 0.8393) and 0.737 on the
    150-document slice (2026-12-04, 0.8859 vs 0.9057), no query with the same 10 in the same order.
    The run is deterministic (same models, data and seed), so 0.7 leaves room for 15 of the 400 documents
    to move, not for a pipeline that fuses or re-scores differently (that would break the 0.95 bound first).
    """
    server, described, _, _ = hybrid_run
    server_vector, _ = vector_run
    local_target = build_target(parse_target_spec(f"hybrid:openwebui?bm25_weight={HYBRID_WEIGHT}"), TargetOptions())
    try:
        local_target.prepare(scifact_slice, no_progress)
        local = local_target.search(judged(scifact_slice), 2 * DEPTH, no_progress)
    finally:
        local_target.close()
    local = [QueryResult(r.qid, r.hits[:DEPTH], r.latency_s) for r in local]
    assert described["settings_applied"]["HYBRID_BM25_WEIGHT"] == HYBRID_WEIGHT
    overlap, same_order = top10_agreement(server, local)
    self_overlap, self_order = top10_agreement(server, server_vector)
    server_ndcg, local_ndcg = ndcg10(scifact_slice, server), ndcg10(scifact_slice, local)
    figures.add(
        "hybrid:openwebui vs real Open WebUI hybrid (top 10)",
        f"mean overlap {overlap:.3f}, same order {same_order:.3f}; nDCG@10 server {server_ndcg:.4f}, "
        f"local {local_ndcg:.4f} (bm25_weight {HYBRID_WEIGHT}, {len(server)} queries)",
    )
    figures.add(
        "Open WebUI hybrid vs its own vector search (top 10)",
        f"mean overlap {self_overlap:.3f}, same order {self_order:.3f}",
    )
    assert self_overlap >= 0.95  # the pipeline the local engine re-creates: hybrid without reranker = dense order
    assert overlap >= 0.7
    assert local_ndcg == pytest.approx(server_ndcg, abs=0.05)


def test_settings_are_restored_after_an_interrupt(vector_run, openwebui_key, openwebui_server, scifact_slice, admin):
    before = settings(admin)
    seen_during: dict[str, Any] = {}

    def interrupting(description: str, total: int | None):
        def advance(n: int) -> None:  # Ctrl-C in the middle of the search, settings changed
            seen_during.update(settings(admin))
            raise KeyboardInterrupt

        return advance

    with pytest.raises(KeyboardInterrupt):
        run_target(
            f"openwebui:hybrid@{openwebui_server.url}?kb={KB}&bm25_weight=0.9",
            scifact_slice,
            DEPTH,
            queries={"q": "cancer"},
            progress=interrupting,
        )
    assert seen_during["HYBRID_BM25_WEIGHT"] == 0.9 and seen_during["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert settings(admin) == before


@pytest.mark.parametrize("endpoint", ["doc", "collection"])
def test_failing_reranker_is_detected_and_named(
    endpoint, vector_run, openwebui_key, openwebui_server, scifact_slice, admin
):
    before = settings(admin)
    dead = f"http://127.0.0.1:{free_port()}/rerank"
    queries = dict(list(judged(scifact_slice).items())[:3])
    results, _described = run_target(
        f"openwebui:rerank@{openwebui_server.url}?kb={KB}&endpoint={endpoint}&reranker_url={dead}&reranker_model=x",
        scifact_slice,
        DEPTH,
        queries=queries,
    )
    if endpoint == "doc":  # the silent fallback, a 200 with unscored results, is each query's error all the same
        assert all(r.error and "reranker-error" in r.error and "null scores" in r.error for r in results)
        assert all(not r.hits for r in results)  # never the unreranked order as if reranked
    else:  # /query/collection refuses outright
        assert all(r.error and "reranker-error: HTTP 400" in r.error for r in results)
    assert settings(admin) == before


def test_embedder_failure_behind_a_200_upload_is_reported(openwebui_key, openwebui_server, admin):
    embedding = admin.get("/api/v1/retrieval/embedding").json()
    form = {
        k: embedding[k]
        for k in (
            "RAG_EMBEDDING_ENGINE",
            "RAG_EMBEDDING_MODEL",
            "RAG_EMBEDDING_BATCH_SIZE",
            "ENABLE_ASYNC_EMBEDDING",
            "RAG_EMBEDDING_CONCURRENT_REQUESTS",
            "openai_config",
        )
    }
    broken = {**form, "openai_config": {**form["openai_config"], "url": f"http://127.0.0.1:{free_port()}"}}
    data = tiny_dataset(
        "embedder-down",
        {"e1": "Photosynthesis in green plants.", "e2": "Volcanoes erupt lava."},
        {"q": "plants"},
        {"q": {"e1": 1}},
    )
    try:
        assert admin.post("/api/v1/retrieval/embedding/update", json=broken).status_code == 200
        target = build_target(
            parse_target_spec(f"openwebui:vector@{openwebui_server.url}?kb=ragbench-test-embedder-down"),
            TargetOptions(),
        )
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
        "identical",
        {"a": text, "b": text, "c": "Mount Vesuvius buried Pompeii in 79 AD."},
        {"q": "Who studied radioactivity in Paris?"},
        {"q": {"b": 1}},
    )
    results, described = run_target(f"openwebui:vector@{openwebui_server.url}?kb=ragbench-test-identical", data, 3)
    assert described["ingest"]["uploaded"] == 2
    assert described["corpus"]["identical_copies"] == 1
    assert described["corpus"]["identical_groups"] == {"a": ["b"]}
    assert [h.doc_id for h in results[0].hits][:2] == ["a", "b"]


class KeyedReranker(JsonStub):
    """A reranker that wants a key: with `Authorization: Bearer KEY` it forwards to infinity's /rerank,
    without it answers 401. Records the Authorization header of every call. On loopback: Open WebUI calls it."""

    def __init__(self, upstream: str, key: str):
        self.upstream, self.key, self.seen = upstream, key, []
        super().__init__({}, default=Whole(self._forward))

    def _forward(self, seen: Seen) -> tuple[int, RawBody]:
        self.seen.append(seen.headers.get("Authorization"))
        if seen.headers.get("Authorization") != f"Bearer {self.key}":
            return 401, RawBody("application/json", b'{"error": "invalid key"}')
        answer = httpx.post(
            f"{self.upstream}/rerank", content=seen.body, timeout=60, headers={"Content-Type": "application/json"}
        )
        return answer.status_code, RawBody("application/json", answer.content)


def test_rerank_variant_sends_the_reranker_key_from_the_environment(
    vector_run, openwebui_key, openwebui_server, infinity_server, scifact_slice, admin, monkeypatch
):
    key = "rr-" + os.urandom(8).hex()
    reranker = KeyedReranker(infinity_server.url, key)
    monkeypatch.setenv("RAG_EXTERNAL_RERANKER_API_KEY", key)
    before = settings(admin)
    queries = dict(list(judged(scifact_slice).items())[:3])
    try:
        results, described = run_target(
            f"openwebui:rerank@{openwebui_server.url}?kb={KB}&reranker_url={reranker.url}/rerank"
            f"&reranker_model={infinity_server.rerank_model}&reranker_timeout=180",
            scifact_slice,
            DEPTH,
            queries=queries,
        )
    finally:
        reranker.stop()
    assert reranker.seen and set(reranker.seen) == {f"Bearer {key}"}  # every rerank call carried the key
    assert all(r.error is None and r.hits and not r.warnings for r in results)
    assert all(h.score is not None for r in results for h in r.hits)  # scored by the reranker, no fallback
    assert key not in json.dumps(described)
    assert described["settings_applied"]["RAG_EXTERNAL_RERANKER_API_KEY"] == "***"
    assert settings(admin) == before


def test_a_file_of_the_same_name_with_other_content_is_not_reused(openwebui_key, openwebui_server, admin):
    """Reuse goes by content hash and processing status, not by file name: a knowledge base whose `a.txt`
    holds another text would have its chunks ranked as this corpus's `a`."""
    kb = "ragbench-test-changed-content"
    vesuvius = "Mount Vesuvius buried Pompeii in 79 AD."
    queries, qrels = {"q": "Who studied radioactivity?"}, {"q": {"a": 1}}
    first = tiny_dataset("changed", {"a": "Marie Curie studied radioactivity in Paris.", "b": vesuvius}, queries, qrels)
    results, described = run_target(f"openwebui:vector@{openwebui_server.url}?kb={kb}", first, 2)
    assert described["ingest"]["uploaded"] == 2 and results[0].hits[0].doc_id == "a"
    _reused, again = run_target(f"openwebui:vector@{openwebui_server.url}?kb={kb}", first, 2)
    assert again["ingest"]["already_present"] == 2 and again["ingest"]["uploaded"] == 0  # same content: reused
    changed = tiny_dataset("changed", {"a": "Ada Lovelace wrote the first algorithm.", "b": vesuvius}, queries, qrels)
    with pytest.raises(ServerError) as failure:
        run_target(f"openwebui:vector@{openwebui_server.url}?kb={kb}", changed, 2)
    assert "(first: a.txt: its content differs from the corpus text)" in str(failure.value)
    kb_id = described["knowledge_base"]["id"]
    assert admin.get(f"/api/v1/knowledge/{kb_id}/files").json()["total"] == 2  # nothing uploaded beside it
