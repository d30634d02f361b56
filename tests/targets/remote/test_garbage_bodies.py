"""Servers that answer garbage: every body the Open WebUI and LightRAG targets read goes through one
checked path, so HTML, truncated JSON or JSON of another shape on any route ends in one line that
names the server, the request and what came back — never a JSONDecodeError or KeyError traceback.

Loopback stubs answer what the real servers answered (../shared/recordings shapes) on every route but
the one under test."""

from __future__ import annotations

import json
from typing import Any

import pytest
from remote_helpers import TINY, tiny_dataset

from bench.core.errors import ServerError
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.beir import write_dataset
from tests.harness.cli import run_cli
from tests.harness.stubs import DROP, JsonStub, RawBody

KB = "kb-1"
FILE = "file-1"
GARBAGE = {
    "html": RawBody("text/html; charset=utf-8", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "truncated": RawBody("application/json", b'{"items": [{"id": "x", "na'),
    "wrong-shape": [["not", "what"], "was asked"],
}
SNIPPET = {"html": "502 Bad Gateway", "truncated": '{"items": [{"id": "x", "na', "wrong-shape": "unexpected shape"}


def openwebui_routes(recordings) -> dict[tuple[str, str], tuple[int, Any]]:
    config = json.loads((recordings / "openwebui-0.12.4" / "retrieval_config.json").read_text())["body"]
    embedding = json.loads((recordings / "openwebui-0.12.4" / "retrieval_embedding.json").read_text())["body"]
    hits = {
        "distances": [[0.9, 0.5]],
        "documents": [["a", "b"]],
        "metadatas": [[{"ragbench_doc_id": "d1", "file_id": FILE}, {"ragbench_doc_id": "d2", "file_id": FILE}]],
    }
    return {
        ("GET", "/api/version"): (200, {"version": "0.12.4"}),
        ("GET", "/api/v1/retrieval/config"): (200, config),
        ("GET", "/api/v1/retrieval/embedding"): (200, embedding),
        ("POST", "/api/v1/retrieval/config/update"): (200, config),
        ("GET", "/api/v1/knowledge/"): (200, {"items": [], "total": 0}),
        ("POST", "/api/v1/knowledge/create"): (200, {"id": KB, "name": "x"}),
        ("GET", f"/api/v1/knowledge/{KB}/files"): (200, {"items": [], "total": 0}),
        ("POST", "/api/v1/files/"): (200, {"id": FILE, "filename": "d1.txt", "data": {"status": "pending"}}),
        ("GET", f"/api/v1/files/{FILE}/process/status"): (200, {"status": "completed"}),
        ("POST", f"/api/v1/knowledge/{KB}/file/add"): (200, {"id": KB}),
        ("POST", "/api/v1/retrieval/query/doc"): (200, hits),
    }


def lightrag_routes() -> dict[tuple[str, str], tuple[int, Any]]:
    docs = [{"id": f"doc-{i}", "status": "processed", "file_path": f"d{i}.txt", "error_msg": None} for i in (1, 2, 3)]
    chunks = [{"reference_id": "1", "content": "…", "file_path": "d1.txt", "chunk_id": "doc-1-chunk-000"}]
    return {
        ("GET", "/health"): (
            200,
            {"status": "healthy", "core_version": "1.5.7", "configuration": {"enable_llm_cache": True}},
        ),
        ("GET", "/documents/status_counts"): (200, {"status_counts": {"all": 0}}),
        ("POST", "/documents/paginated"): (200, {"documents": [], "pagination": {"has_next": False}}),
        ("POST", "/documents/texts"): (200, {"status": "success", "track_id": "insert_1"}),
        ("GET", "/documents/track_status/insert_1"): (200, {"track_id": "insert_1", "documents": docs}),
        ("POST", "/query/data"): (200, {"status": "success", "data": {"chunks": chunks}, "metadata": {}}),
        ("DELETE", "/documents/delete_document"): (200, {"status": "deletion_started", "message": "ok"}),
    }


def run(spec: str) -> list:
    target = build_target(parse_target_spec(spec), TargetOptions())
    try:
        target.prepare(TINY, no_progress)
        return target.search({"q1": "Who studied radioactivity?"}, 10, no_progress)
    finally:
        target.close()


# The routes whose body a target reads (a settings update's or attach's answer is not read).
OPENWEBUI_READ = [
    "GET /api/version",
    "GET /api/v1/retrieval/config",
    "GET /api/v1/retrieval/embedding",
    "GET /api/v1/knowledge/",
    "POST /api/v1/knowledge/create",
    f"GET /api/v1/knowledge/{KB}/files",
    "POST /api/v1/files/",
    f"GET /api/v1/files/{FILE}/process/status",
    "POST /api/v1/retrieval/query/doc",
]
LIGHTRAG_READ = [
    "GET /health",
    "POST /documents/paginated",
    "POST /documents/texts",
    "GET /documents/track_status/insert_1",
    "POST /query/data",
    "DELETE /documents/delete_document",
]


def _check(stub: JsonStub, spec: str, route: str, garbage: str, server: str) -> None:
    method, path = route.split(" ", 1)
    stub.routes[(method, path)] = (200, GARBAGE[garbage])
    try:
        results = run(spec)
    except ServerError as exc:  # a failure during prepare or close: the run's one line
        message = str(exc)
    else:  # a failure of the query itself: that query's error
        assert len(results) == 1 and results[0].error, results
        message = results[0].error
    assert "\n" not in message
    assert message.startswith(f"{server} at {stub.url}: "), message
    assert route in message, message
    assert SNIPPET[garbage] in message, message


@pytest.mark.parametrize("garbage", GARBAGE)
@pytest.mark.parametrize("route", OPENWEBUI_READ)
def test_openwebui_garbage_is_one_line_naming_server_request_and_body(route, garbage, shared_dir, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-garbage")
    stub = JsonStub(openwebui_routes(shared_dir / "recordings"))
    try:
        _check(stub, f"openwebui:vector@{stub.url}", route, garbage, "Open WebUI")
    finally:
        stub.stop()


@pytest.mark.parametrize("garbage", GARBAGE)
@pytest.mark.parametrize("route", LIGHTRAG_READ)
def test_lightrag_garbage_is_one_line_naming_server_request_and_body(route, garbage, monkeypatch):
    monkeypatch.setenv("LIGHTRAG_API_KEY", "lr-test-garbage")
    stub = JsonStub(lightrag_routes())
    try:
        _check(stub, f"lightrag:naive@{stub.url}?cleanup=true", route, garbage, "LightRAG")
    finally:
        stub.stop()


def test_the_stubs_answer_a_clean_run(shared_dir, monkeypatch):
    """The routes above are complete: without garbage both targets rank the query."""
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-garbage")
    monkeypatch.setenv("LIGHTRAG_API_KEY", "lr-test-garbage")
    for routes, spec in (
        (openwebui_routes(shared_dir / "recordings"), "openwebui:vector"),
        (lightrag_routes(), "lightrag:naive"),
    ):
        stub = JsonStub(routes)
        try:
            results = run(f"{spec}@{stub.url}?cleanup=true" if spec.startswith("lightrag") else f"{spec}@{stub.url}")
        finally:
            stub.stop()
        assert results[0].error is None and results[0].hits[0].doc_id == "d1"


def test_a_server_dying_mid_run_ends_that_target_as_failed_and_keeps_its_finished_queries(
    tmp_path, monkeypatch, capsys
):
    """LightRAG answers three queries, then drops every connection: the target ends after three queries in a
    row get no answer, its finished queries kept and the reason recorded; the next target still runs."""
    queries = {f"q{i}": f"question number {i} about radioactivity" for i in range(1, 9)}
    data = tiny_dataset(
        "dying",
        {f"d{i}": f"Document {i} on radioactivity and Paris." for i in (1, 2, 3)},
        queries,
        {qid: {"d1": 1} for qid in queries},
    )
    routes = lightrag_routes()
    answered = routes[("POST", "/query/data")]
    served = []

    def query_data(body: bytes):
        served.append(1)
        return answered if len(served) <= 3 else DROP

    routes[("POST", "/query/data")] = query_data
    stub = JsonStub(routes)
    monkeypatch.setenv("LIGHTRAG_API_KEY", "lr-test-dying")
    try:
        code, _, err = run_cli(
            [
                "quality",
                "--dataset",
                str(write_dataset(tmp_path / "data", data)),
                "-t",
                f"lightrag:naive@{stub.url}",
                "-t",
                "bm25",
                "--out",
                str(tmp_path / "out"),
                "--depth",
                "10",
                "-m",
                "nDCG@10",
            ],
            monkeypatch,
            capsys,
        )
    finally:
        stub.stop()
    # Everything was written; the exit code says a measurement failed (3), in one last line.
    assert code == 3 and err.splitlines()[-1].startswith(
        "ragbench: error: target lightrag:naive: ended part-way after 3 queries: "
    ), err
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    target = next(r for r in records if r.get("record") == "target" and r["name"] == "lightrag:naive")
    assert target["status"] == "failed" and target["queries"] == 3 and target["errors"] == 0
    assert "3 queries in a row got no answer" in target["error"] and "after 3 of 8 queries" in target["error"]
    assert len(served) == 6  # three answered, three dropped, none after
    assert [r["qid"] for r in records if r.get("record") == "query" and r["target"] == "lightrag:naive"] == [
        "q1",
        "q2",
        "q3",
    ]
    metric = next(r for r in records if r.get("record") == "metrics" and r["target"] == "lightrag:naive")
    assert metric["queries"] == 8  # the unfinished five count, as zeros
    assert any(r.get("record") == "target" and r["name"] == "bm25" and r["status"] == "ok" for r in records)
    assert records[-1]["record"] == "end" and records[-1]["status"] == "complete"
    assert "ended part-way after 3 queries" in (tmp_path / "out" / "report.md").read_text()
