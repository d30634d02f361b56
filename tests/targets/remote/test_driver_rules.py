"""Driver rules that the real servers rarely show on demand, against stubs that answer in the real servers'
recorded shapes, on httpx.MockTransport (the rules are under test, not the wire): LightRAG's failures other than
"no results", documents spanning several chunks, a deletion that takes a while, and Open WebUI files whose
processing did not complete. (The same rules run against the real servers in test_lightrag.py / test_openwebui.py
where they can.)"""

from __future__ import annotations

import json

import pytest
from remote_helpers import TINY, tiny_dataset
from test_garbage_bodies import FILE, KB, lightrag_routes, openwebui_routes

from bench.core.errors import ServerError
from bench.targets.base import Target, no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.stubs import JsonRoutes


def on(server: JsonRoutes, spec: str) -> Target:
    """The target `KIND[?PARAMS]` at a server no socket reaches: its requests go to `server`'s routes."""
    kind, _, params = spec.partition("?")
    url = f"http://stub.invalid{'?' + params if params else ''}"
    return build_target(parse_target_spec(f"{kind}@{url}"), TargetOptions(transport=server.transport()))


def run_on(server: JsonRoutes, spec: str) -> list:
    """`on(server, spec)` prepared on the tiny data set and asked one question."""
    target = on(server, spec)
    try:
        target.prepare(TINY, no_progress)
        return target.search({"q1": "Who studied radioactivity?"}, 10, no_progress)
    finally:
        target.close()


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("LIGHTRAG_API_KEY", "lr-test-rules")
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-rules")


def test_lightrag_no_results_is_an_empty_ranking_and_any_other_failure_an_error(keys, shared_dir):
    recorded = json.loads((shared_dir / "recordings" / "lightrag-1.5.7" / "query_data_after_delete.json").read_text())
    routes = lightrag_routes()
    answers = {
        "no results": recorded["body"],  # status failure, failure_reason no_results
        "other": {"status": "failure", "message": "Invalid response type", "data": {}, "metadata": {}},
    }
    routes[("POST", "/query/data")] = lambda body: (200, answers[json.loads(body)["query"]])
    stub = JsonRoutes(routes)
    target = on(stub, "lightrag:mix")
    try:
        target.prepare(TINY, no_progress)
        empty, failed = target.search({"q1": "no results", "q2": "other"}, 10, no_progress)
    finally:
        target.close()
    assert empty.error is None and empty.hits == []
    assert failed.hits == [] and failed.error is not None
    assert "POST /query/data failed (HTTP 200, status 'failure'): Invalid response type" in failed.error


def ranked_chunks(ranked: list[str], asked: list[int]) -> JsonRoutes:
    """A LightRAG whose /query/data answers the first `chunk_top_k` of `ranked` (file paths), noting each ask."""

    def query_data(body: bytes):
        k = json.loads(body)["chunk_top_k"]
        asked.append(k)
        chunks = [{"file_path": path, "content": "…", "chunk_id": f"c{i}"} for i, path in enumerate(ranked[:k])]
        return 200, {"status": "success", "data": {"chunks": chunks}, "metadata": {}}

    routes = lightrag_routes()
    routes[("POST", "/query/data")] = query_data
    return JsonRoutes(routes)


def search_one(server: JsonRoutes, spec: str, depth: int) -> list:
    target = on(server, spec)
    try:
        target.prepare(TINY, no_progress)
        return [h.doc_id for h in target.search({"q1": "x"}, depth, no_progress)[0].hits]
    finally:
        target.close()


def test_lightrag_over_fetch_doubles_until_depth_documents_are_filled(keys):
    """d1 and d2 span several chunks that rank first: with chunk_top_k = depth the ranking would hold one document."""
    asked: list[int] = []
    stub = ranked_chunks(["d1.txt"] * 7 + ["d2.txt"] * 5 + ["d3.txt"], asked)
    assert search_one(stub, "lightrag:naive", 3) == ["d1", "d2", "d3"]
    assert asked == [6, 12, 24]  # 2 × depth, doubled while short of 3 documents and the server had more


def test_lightrag_over_fetch_stops_when_the_server_has_no_more_or_at_max_chunks(keys):
    asked: list[int] = []
    stub = ranked_chunks(["d1.txt"] * 5 + ["d2.txt", "d1.txt", "d3.txt"], asked)
    assert search_one(stub, "lightrag:naive", 10) == ["d1", "d2", "d3"]
    assert search_one(stub, "lightrag:naive?max_chunks=4", 3) == ["d1"]
    # depth 10: 20 chunks asked, the server had 8: no second ask; max_chunks=4 caps every ask.
    assert asked == [20, 4]


def test_lightrag_cleanup_waits_until_the_documents_are_gone(keys):
    """LightRAG answers `deletion_started` at once and deletes in the background: cleanup is done only
    once the documents are no longer listed."""
    listed = [{"id": f"doc-{i}", "status": "processed", "file_path": f"d{i}.txt"} for i in (1, 2, 3)]
    state = {"deleted": False, "lists_after_delete": 0}

    def paginated(body: bytes):
        if state["deleted"]:
            state["lists_after_delete"] += 1
        still = state["deleted"] and state["lists_after_delete"] <= 2  # two more listings show them
        return 200, {"documents": listed if still else [], "pagination": {"has_next": False}}

    def delete(body: bytes):
        state["deleted"] = True
        return 200, {"status": "deletion_started", "message": "started"}

    routes = lightrag_routes()
    routes[("POST", "/documents/paginated")] = paginated
    routes[("DELETE", "/documents/delete_document")] = delete
    stub = JsonRoutes(routes)
    target = on(stub, "lightrag:naive?cleanup=true")
    target.prepare(TINY, no_progress)
    target.close()
    assert state["lists_after_delete"] == 3  # polled until the listing no longer held them
    assert target.describe()["cleanup"] == {"requested": True, "deleted": 3}


@pytest.mark.parametrize(
    ("stored", "status", "why"),
    [
        (
            {"hash": "h", "meta": {"name": "d1.txt", "file_hash": "0" * 64}},
            "completed",
            "its content differs from the corpus text",
        ),
        (
            {"hash": None, "meta": {"name": "d1.txt", "file_hash": "MATCH"}},
            "completed",
            "its processing never completed",
        ),
        (
            {"hash": "h", "meta": {"name": "d1.txt", "file_hash": "MATCH"}},
            "failed",
            "its processing status is 'failed'",
        ),
    ],
)
def test_openwebui_reuses_a_file_only_when_content_and_processing_match(stored, status, why, keys, shared_dir):
    from bench.targets.openwebui_knowledge import content_hash

    stored = json.loads(json.dumps(stored).replace("MATCH", content_hash(TINY.corpus["d1"].full_text)))
    routes = openwebui_routes(shared_dir / "recordings")
    routes[("GET", "/api/v1/knowledge/")] = (200, {"items": [{"id": KB, "name": "reused"}], "total": 1})
    routes[("GET", f"/api/v1/knowledge/{KB}/files")] = (
        200,
        {"items": [{"id": FILE, "filename": "d1.txt", **stored}], "total": 1},
    )
    routes[("GET", f"/api/v1/files/{FILE}/process/status")] = (200, {"status": status})
    stub = JsonRoutes(routes)
    with pytest.raises(ServerError) as failure:
        run_on(stub, "openwebui:vector?kb=reused")
    assert (
        f"knowledge base 'reused' already holds 1 file(s) named like corpus documents that cannot be reused "
        f"(first: d1.txt: {why})" in str(failure.value)
    )
    assert not [r for r in stub.requests if r[0] == "POST" and r[1].startswith("/api/v1/files/")]  # nothing uploaded


def test_openwebui_reuses_a_file_whose_content_and_processing_match(keys, shared_dir):
    from bench.targets.openwebui_knowledge import content_hash

    data = tiny_dataset("one", {"d1": TINY.corpus["d1"].text}, {"q1": "radioactivity"}, {"q1": {"d1": 1}})
    routes = openwebui_routes(shared_dir / "recordings")
    routes[("GET", "/api/v1/knowledge/")] = (200, {"items": [{"id": KB, "name": "reused"}], "total": 1})
    routes[("GET", f"/api/v1/knowledge/{KB}/files")] = (
        200,
        {
            "items": [
                {
                    "id": FILE,
                    "filename": "d1.txt",
                    "hash": "h",
                    "meta": {"name": "d1.txt", "file_hash": content_hash(data.corpus["d1"].full_text)},
                }
            ],
            "total": 1,
        },
    )
    stub = JsonRoutes(routes)
    target = on(stub, "openwebui:vector?kb=reused")
    try:
        target.prepare(data, no_progress)
    finally:
        target.close()
    assert target.describe()["ingest"]["already_present"] == 1 and target.describe()["ingest"]["uploaded"] == 0


@pytest.mark.parametrize(
    ("env_key", "reranker_url", "sent"),
    [
        ("rr-from-env", "http://own-reranker/rerank", "rr-from-env"),  # the environment's key, always
        (None, "http://own-reranker/rerank", None),  # none given: the server's own key stays for its own URL
        (None, "http://other-reranker/rerank", ""),  # ... and never goes to another URL
    ],
)
def test_openwebui_rerank_variant_sets_the_reranker_key(env_key, reranker_url, sent, keys, shared_dir, monkeypatch):
    if env_key:
        monkeypatch.setenv("RAG_EXTERNAL_RERANKER_API_KEY", env_key)
    else:
        monkeypatch.delenv("RAG_EXTERNAL_RERANKER_API_KEY", raising=False)
    routes = openwebui_routes(shared_dir / "recordings")
    config = {
        **routes[("GET", "/api/v1/retrieval/config")][1],
        "RAG_EXTERNAL_RERANKER_URL": "http://own-reranker/rerank",
        "RAG_EXTERNAL_RERANKER_API_KEY": "server-own-key",
    }
    updates: list[dict] = []

    def update(body: bytes):  # a server that takes the settings it is sent
        updates.append(json.loads(body))
        config.update(updates[-1])
        return 200, config

    routes[("GET", "/api/v1/retrieval/config")] = lambda body: (200, config)
    routes[("POST", "/api/v1/retrieval/config/update")] = update
    stub = JsonRoutes(routes)
    run_on(stub, f"openwebui:rerank?reranker_url={reranker_url}&reranker_model=m")
    applied, restored = updates
    assert applied.get("RAG_EXTERNAL_RERANKER_API_KEY") == sent
    assert restored["RAG_EXTERNAL_RERANKER_API_KEY"] == "server-own-key"  # written back in close()
    assert config["RAG_EXTERNAL_RERANKER_API_KEY"] == "server-own-key"


@pytest.mark.parametrize("status, inserted", [(409, True), (400, False)])
def test_lightrag_insert_waits_while_the_pipeline_is_deleting(keys, monkeypatch, status, inserted):
    """LightRAG still deletes in the background after the deleted documents leave its list, and answers a new
    insert 409 "Pipeline is clearing or deleting documents. Wait for the running job to finish" meanwhile (seen
    in CI right after a cleanup): the insert waits and tries again, as the server asks; any other error is one."""
    from bench.targets import lightrag_documents

    monkeypatch.setattr(lightrag_documents, "POLL_S", 0.01)
    busy = "Pipeline is clearing or deleting documents. Wait for the running job to finish before submitting new work."
    posts: list[int] = []

    def texts(body: bytes):
        posts.append(1)
        return (status, {"detail": busy}) if len(posts) <= 2 else (200, {"status": "success", "track_id": "insert_1"})

    routes = lightrag_routes()
    routes[("POST", "/documents/texts")] = texts
    stub = JsonRoutes(routes)
    target = on(stub, "lightrag:naive")
    if inserted:
        target.prepare(TINY, no_progress)
    else:
        with pytest.raises(ServerError, match="HTTP 400 from POST /documents/texts"):
            target.prepare(TINY, no_progress)
    target.close()
    assert len(posts) == (3 if inserted else 1)
