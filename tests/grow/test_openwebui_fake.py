"""`ragbench grow` through the Open WebUI fake (tests/harness/openwebui_fake.py: settings, knowledge bases, files;
no query route): one knowledge base grown incrementally, each document uploaded once, the retrieval settings put
back as they were before the first rung, failing queries recorded with the server's answer, a signal keeping the
finished rungs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.openwebui_fake import FakeOpenWebUI
from tests.paths import REPO


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-key")
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    server = FakeOpenWebUI()
    # the settings the hybrid mode changes, as a real server lists them: each must come back as it was
    server.retrieval |= {"ENABLE_RAG_HYBRID_SEARCH": False, "HYBRID_BM25_WEIGHT": 0.3}
    server.retrieval |= {"RAG_RERANKING_ENGINE": "", "RAG_RERANKING_MODEL": ""}
    server.retrieval |= {f"RAG_EXTERNAL_RERANKER_{k}": "" for k in ("URL", "API_KEY", "TIMEOUT")}
    yield server
    server.close()


@pytest.fixture
def data(tmp_path):
    docs = {f"d{i}": f"text about topic {i}" for i in range(4)}
    return write_beir(tmp_path / "data", docs, {"q1": "topic 1"}, [("q1", "d1", 1)])


def test_the_knowledge_base_grows_by_each_increment_and_settings_come_back(ragbench, fake, data, tmp_path):
    before = fake.settings()
    out = tmp_path / "o"
    code, _, err = ragbench(
        "grow", "--dataset", data, "-t", f"openwebui:hybrid@{fake.url}", "--rungs", "4,8,12", "--keep", "--out", out
    )
    assert code == 3, err  # every query failed (the fake has no query route): measured, and said
    assert fake.uploads == 12  # each document once: rung 2 and 3 sent only their new documents
    (kb,) = fake.knowledge.values()
    assert len(kb["files"]) == 12
    assert fake.settings() == before  # saved at the first rung, put back once at the end
    assert sorted(fake.status_checks) == sorted(fake.files)  # each file's processing read once, never per rung
    assert fake.updates == 2  # the mode's settings written at rung 1 (in place since), put back at the end
    rungs = read_results(out / "results.jsonl").grow_rungs
    assert [(r.size, r.added, r.ingest_mode) for r in rungs] == [
        (4, 4, "incremental"),
        (8, 4, "incremental"),
        (12, 4, "incremental"),
    ]
    assert all(r.errors == {"http-404": 1} and "Not Found" in r.error_examples["http-404"] for r in rungs)
    assert all(r.app_ingest_seconds is not None and 0 < r.app_ingest_seconds <= r.ingest_seconds for r in rungs)
    assert {r.target for r in rungs} == {"openwebui:hybrid"}  # the knowledge base grow names is not in the name
    assert "rung(s) failed or had failed queries" in err.splitlines()[-1]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_rung_keeps_the_finished_rungs_and_puts_the_settings_back(ragbench, fake, data, tmp_path, signum):
    before = fake.settings()
    fake.on_upload = lambda count: count == 6 and os.kill(os.getpid(), signum)  # in rung 2
    out = tmp_path / "o"
    code, _, err = ragbench(
        "grow", "--dataset", data, "-t", f"openwebui:hybrid@{fake.url}", "--rungs", "4,8,12", "--out", out
    )
    assert code == 128 + signum, err
    results = read_results(out / "results.jsonl")
    assert [r.rung for r in results.grow_rungs] == [1] and results.end is not None
    assert results.end.status == "interrupted"
    assert [s.largest_ok for s in results.grow_summaries] == [None]  # rung 1's queries failed: nothing held
    assert fake.settings() == before
    assert len(fake.knowledge) == 1  # kept for --resume


def test_two_modes_on_one_server_grow_their_own_bases_removed_at_the_end_and_the_settings_come_back(
    ragbench, fake, data, tmp_path
):
    before = fake.settings()
    targets = ["-t", f"hyb=openwebui:hybrid@{fake.url}", "-t", f"vec=openwebui:vector@{fake.url}"]
    code, _, err = ragbench("grow", "--dataset", data, *targets, "--rungs", "4,8", "--out", tmp_path / "o")
    assert code == 3, err
    assert fake.uploads == 16  # 8 documents in each mode's own knowledge base: no ingest timed twice as one
    assert fake.knowledge == {} and fake.files == {}  # without --keep, what the run made is removed
    assert fake.settings() == before  # the second mode put back what it found (the first's), then the first its own


def test_a_resumed_run_grows_the_kept_base_and_removes_all_of_it_at_the_end(ragbench, fake, data, tmp_path):
    fake.on_upload = lambda count: count == 6 and os.kill(os.getpid(), signal.SIGTERM)  # in rung 2
    out = tmp_path / "o"
    args = ["--dataset", data, "-t", f"openwebui:hybrid@{fake.url}", "--rungs", "4,8,12"]
    assert ragbench("grow", *args, "--out", out)[0] == 128 + signal.SIGTERM
    fake.on_upload = lambda count: None
    code, _, err = ragbench("grow", *args, "--resume", out)
    assert code == 3, err  # the fake answers no query: measured, and said
    rungs = read_results(out / "results.jsonl").grow_rungs
    assert [(r.rung, r.resumed) for r in rungs] == [(1, False), (2, True), (3, False)]
    assert fake.uploads == 12  # what the stopped run uploaded was reused, not sent again
    assert fake.knowledge == {} and fake.files == {}  # grow's own base, the stopped run's files with it


def test_files_an_earlier_run_left_are_checked_once_and_the_runs_own_never_again(ragbench, fake, data, tmp_path):
    target = ["-t", f"openwebui:vector@{fake.url}"]
    code, _, err = ragbench("grow", "--dataset", data, *target, "--rungs", "4", "--keep", "--out", tmp_path / "a")
    assert code == 3, err  # the fake answers no query
    kept = sorted(fake.files)
    fake.status_checks.clear()
    code, _, err = ragbench("grow", "--dataset", data, *target, "--rungs", "4,8,12", "--keep", "--out", tmp_path / "b")
    assert code == 3, err
    assert fake.uploads == 12  # the kept 4 reused, 8 uploaded
    # the kept files: found in the base, not this run's, so checked (at rung 1 only); each new file at its upload
    assert sorted(fake.status_checks) == sorted(fake.files) and set(kept) <= set(fake.status_checks)
    assert sorted(fake.status_checks[:4]) == kept  # rung 1 held only the kept files


def test_a_rung_whose_documents_the_base_already_held_has_no_ingest_rate(ragbench, fake, data, tmp_path):
    target = ["-t", f"vec=openwebui:vector@{fake.url}"]
    code, _, err = ragbench("grow", "--dataset", data, *target, "--rungs", "4", "--keep", "--out", tmp_path / "a")
    assert code == 3, err  # the fake answers no query
    code, _, err = ragbench("grow", "--dataset", data, *target, "--rungs", "4,8", "--keep", "--out", tmp_path / "b")
    assert code == 3, err
    first, second = read_results(tmp_path / "b" / "results.jsonl").grow_rungs
    assert fake.uploads == 8  # the kept 4 reused at rung 1, 4 uploaded at rung 2
    assert first.added == 4 and first.docs_per_s is None  # nothing sent: a rate over reused files would be no rate
    assert second.docs_per_s == pytest.approx(4 / second.ingest_seconds, rel=1e-9)
    assert "rung 1/2 4 docs vec: ingest incremental" in err and "none sent: the base held them" in err


def test_an_open_webui_target_takes_grows_data_dir_and_pid(ragbench, fake, data, tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "chroma.sqlite3").write_bytes(b"x" * 10_000)
    spec = f"vec=openwebui:vector@{fake.url}?data_dir={tmp_path / 'store'}&pid={os.getpid()}"
    code, _, err = ragbench("grow", "--dataset", data, "-t", spec, "--rungs", "4", "--out", tmp_path / "o")
    assert code == 3, err  # measured (the fake answers no query), not refused as an unknown parameter
    (rung,) = read_results(tmp_path / "o" / "results.jsonl").grow_rungs
    assert rung.store_bytes is not None and rung.store_bytes >= 10_000 and rung.app_rss_bytes


def test_a_server_that_dies_mid_rung_fails_that_rung_in_one_line_and_keeps_the_finished_ones(
    ragbench, data, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-key")
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    server = FakeOpenWebUI(die_after_uploads=6)  # gone during rung 2's upload
    out = tmp_path / "o"
    try:
        code, _, err = ragbench(
            "grow", "--dataset", data, "-t", f"openwebui:hybrid@{server.url}", "--rungs", "4,8,12", "--out", out
        )
    finally:
        server.close()
    assert code == 3, err
    rungs = read_results(out / "results.jsonl").grow_rungs
    assert [(r.rung, r.status) for r in rungs] == [(1, "errors"), (2, "failed")]  # rung 3 not tried
    assert rungs[1].error is not None and "cannot reach" in rungs[1].error
    lines = err.splitlines()
    assert any(line.startswith("rung 2/3 8 docs openwebui:hybrid: FAILED Open WebUI at") for line in lines)
    assert any("retrieval settings NOT restored" in line for line in lines)  # said once, in one line
    assert "Traceback" not in err and "rung(s) failed or had failed queries" in lines[-1]


def test_the_rerank_mode_grows_its_base_and_puts_the_reranker_settings_back(ragbench, fake, data, tmp_path):
    before = fake.settings()
    out = tmp_path / "o"
    spec = f"rr=openwebui:rerank@{fake.url}?reranker_url=http://127.0.0.1:9/v1/rerank&reranker_model=bge-reranker"
    code, _, err = ragbench("grow", "--dataset", data, "-t", spec, "--rungs", "4,8", "--out", out)
    assert code == 3, err  # the fake answers no query: measured, and said
    rungs = read_results(out / "results.jsonl").grow_rungs
    assert [(r.target, r.size, r.added, r.ingest_mode) for r in rungs] == [
        ("rr", 4, 4, "incremental"),
        ("rr", 8, 4, "incremental"),
    ]
    assert fake.uploads == 8 and fake.knowledge == {}  # grown once, removed at the end
    assert fake.settings() == before  # the reranker engine, model and hybrid switch as they were


def test_rungs_in_chunks_need_the_apps_embedding_calls_through_the_meter(ragbench, fake, data, tmp_path):
    from tests.harness.stubs import JsonStub

    embedder = JsonStub({})  # the fake never embeds: no call can pass the meter
    out = tmp_path / "o"
    args = ["grow", "--dataset", data, "-t", f"openwebui:vector@{fake.url}", "--rungs", "4,8", "--out", out]
    try:
        code, _, err = ragbench(*args, "--unit", "chunks")
        assert code == 2 and "--unit chunks: Open WebUI" in err and len(err.splitlines()) == 1, err
        meter = ["--meter-upstream", f"embedding={embedder.url}", "--meter-port", "0"]
        code, _, err = ragbench(*args, "--unit", "chunks", *meter, "--overwrite")
    finally:
        embedder.stop()
    assert code == 2, err
    assert "no embedding call passed the meter" in err.splitlines()[-1]
    assert fake.knowledge == {}  # what the run uploaded is removed


def test_an_empty_document_is_said_once_at_the_rung_that_brought_it_not_again_at_each_rung(ragbench, fake, tmp_path):
    docs = {"d0": "", **{f"d{i}": f"text about topic {i}" for i in range(1, 4)}}
    data = write_beir(tmp_path / "data", docs, {"q1": "topic 1"}, [("q1", "d1", 1)])
    code, _, err = ragbench(
        "grow", "--dataset", data, "-t", f"openwebui:vector@{fake.url}", "--rungs", "4,8,12", "--out", tmp_path / "o"
    )
    assert code == 3, err  # the fake answers no query
    said = [line for line in err.splitlines() if "empty document(s) not uploaded" in line]
    assert len(said) == 1 and said[0].startswith("openwebui:vector: 1 empty document(s)"), said  # rung 1's, once
    assert fake.uploads == 11  # the 3 non-empty documents, then 4 and 4 distractors


@pytest.mark.slow  # a ragbench subprocess, killed outright
def test_a_grow_killed_outright_is_put_back_by_the_next_run_before_it_reads_its_own_originals(
    ragbench, fake, data, tmp_path
):
    """SIGKILL runs no `finally`: the killed run's hybrid settings stayed on the server, and the next run (`--resume`)
    saved them as the originals it put back: the server ended with hybrid search on where it was off."""
    before = fake.settings()
    out = tmp_path / "o"
    argv = [
        "grow",
        "--dataset",
        str(data),
        "-t",
        f"openwebui:hybrid@{fake.url}",
        "--rungs",
        "4,8,12",
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "bench", *argv], cwd=REPO, env=env, stderr=subprocess.DEVNULL)
    fake.on_upload = lambda count: count == 6 and proc.kill()  # in rung 2: the mode's settings are on
    assert proc.wait(timeout=KILLED_WITHIN_S) == -signal.SIGKILL
    assert fake.settings() != before and fake.settings()["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert [r.rung for r in read_results(out / "results.jsonl").grow_rungs] == [1]  # each rung kept as it ended
    fake.on_upload = lambda count: None
    code, _, err = ragbench(*argv[:-2], "--resume", out)
    assert code == 3, err  # the fake answers no query: measured, and said
    assert f"restored the settings an interrupted run left on {fake.url}" in err
    assert fake.settings() == before
    assert not list((tmp_path / "cache" / "restore").glob("*.json"))


KILLED_WITHIN_S = 120  # a subprocess's start and two rungs of 4 documents on a loaded 2-core runner
