"""`ragbench ingest` when the server fails it, through a fake Open WebUI (tests/harness/openwebui_fake.py): a refused
settings update and a server that dies mid-sweep stop the sweep with one line and exit 3, the finished combinations
kept; settings restored where the server is there to take them, else kept in the journal for the next run."""

from __future__ import annotations

import json

import pytest

from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.openwebui_fake import FakeOpenWebUI

DOCS = {f"d{i}": f"Document {i} about topic {i % 3}." for i in range(6)}


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-key")
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    return write_beir(tmp_path / "data", DOCS, {"q1": "topic"}, [("q1", "d1", 1)])


def sweep(ragbench, data, fake: FakeOpenWebUI, out, *more: str):  # type: ignore[no-untyped-def]
    return ragbench(
        "ingest", "--dataset", data, "-t", f"openwebui@{fake.url}?concurrency=1", "--out", out,
        "--setting", "RAG_EMBEDDING_BATCH_SIZE=8,16,32", *more,
    )  # fmt: skip


def test_a_refused_update_stops_the_sweep_keeps_the_finished_and_restores(ragbench, data, tmp_path):
    fake = FakeOpenWebUI(refuse={"RAG_EMBEDDING_BATCH_SIZE": 16})  # the second combination's update is refused
    before = fake.settings()
    try:
        code, _, err = sweep(ragbench, data, fake, tmp_path / "out")
        assert code == 3
        assert err.strip().splitlines()[-1].startswith("ragbench: error: openwebui@")
        assert "RAG_EMBEDDING_BATCH_SIZE=16: " in err and "HTTP 500" in err
        assert fake.settings() == before  # the restore went through
    finally:
        fake.close()
    results = read_results(tmp_path / "out" / "results.jsonl")
    assert [(p.label, p.status) for p in results.ingest_points] == [
        ("RAG_EMBEDDING_BATCH_SIZE=8", "ok"),
        ("RAG_EMBEDDING_BATCH_SIZE=16", "failed"),
    ]
    assert results.ingest_points[0].processed == len(DOCS)
    assert results.end is not None and results.end.status == "complete"
    assert results.ingest_summaries[0].recommended == "RAG_EMBEDDING_BATCH_SIZE=8"


def test_a_server_dying_mid_sweep_keeps_the_finished_and_leaves_the_journal(ragbench, data, tmp_path):
    fake = FakeOpenWebUI(die_after_uploads=len(DOCS) + 2)  # dies in the second combination
    code, _, err = sweep(ragbench, data, fake, tmp_path / "out")
    assert code == 3
    assert "the restore journal" in err and "RAG_EMBEDDING_BATCH_SIZE=16: " in err
    assert "set them back by hand to RAG_EMBEDDING_BATCH_SIZE=1 " in err and "{'" not in err  # words, not a dict
    results = read_results(tmp_path / "out" / "results.jsonl")
    assert [p.status for p in results.ingest_points] == ["ok", "failed"]
    journals = list((tmp_path / "cache" / "restore").glob("openwebui-*.json"))
    assert len(journals) == 1 and json.loads(journals[0].read_text())["saved"] == {"RAG_EMBEDDING_BATCH_SIZE": 1}
    assert "sk-test-key" not in (tmp_path / "out" / "results.jsonl").read_text() + err


def test_a_sweep_on_a_fake_server_measures_every_combination(ragbench, data, tmp_path):
    fake = FakeOpenWebUI()
    before = fake.settings()
    try:
        code, _, err = sweep(ragbench, data, fake, tmp_path / "out", "--setting", "CHUNK_SIZE=200,400")
        assert code == 0, err
        assert fake.settings() == before and fake.knowledge == {} and fake.files == {}  # nothing left behind
    finally:
        fake.close()
    results = read_results(tmp_path / "out" / "results.jsonl")
    assert len(results.ingest_points) == 6
    assert {p.settings["CHUNK_SIZE"] for p in results.ingest_points} == {200, 400}
    assert all(p.processed == len(DOCS) and p.calls == {} and p.direct is None for p in results.ingest_points)
