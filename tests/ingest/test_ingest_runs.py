"""`ragbench ingest` end to end on a fake Open WebUI (tests/harness/openwebui_fake.py): a target's name kept in the
results, a server or name given twice refused, a corpus with repeated texts said, the answer printed, a run that
measured nothing exit 3, a meter the app cannot be measured through refused before anything, and nothing left on the
server after a signal mid-combination."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from bench.results.store import read_results
from bench.targets.settings_journal import SettingsJournal
from tests.harness.beir import write_beir
from tests.harness.openwebui_fake import FakeOpenWebUI
from tests.harness.process import free_port


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-key")
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    server = FakeOpenWebUI()
    yield server
    server.close()


def corpus(tmp_path, texts: list[str]):  # type: ignore[no-untyped-def]
    docs = {f"d{i}": text for i, text in enumerate(texts)}
    return write_beir(tmp_path / "data", docs, {"q1": "topic"}, [("q1", "d0", 1)])


def test_a_targets_name_is_what_the_results_call_it(ragbench, fake, tmp_path):
    data = corpus(tmp_path, ["one text", "another text"])
    code, _, err = ragbench("ingest", "--dataset", data, "-t", f"prod=openwebui@{fake.url}", "--out", tmp_path / "o")
    assert code == 0, err
    results = read_results(tmp_path / "o" / "results.jsonl")
    # The name pairs a baseline and a current run on different URLs in `compare`; the header keeps the URL.
    assert [p.target for p in results.ingest_points] == ["prod"]
    assert [s.target for s in results.ingest_summaries] == ["prod"]
    assert results.header.targets == [f"prod=openwebui@{fake.url}"]


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ("openwebui@{url}", "openwebui@{url}/", "the same server as --target"),
        ("a=openwebui@{url}", "b=openwebui@{url}?concurrency=2", "the same server as --target"),
        ("a=openwebui@{url}", "a=lightrag@http://elsewhere:9621", "a=...: the name is given twice"),
    ],
)
def test_a_server_or_a_name_given_twice_is_one_line_before_anything(ragbench, fake, tmp_path, first, second, message):
    data = corpus(tmp_path, ["one text"])
    targets = ["-t", first.format(url=fake.url), "-t", second.format(url=fake.url)]
    code, _, err = ragbench("ingest", "--dataset", data, *targets, "--out", tmp_path / "o")
    assert code == 2 and message in err and "Traceback" not in err, err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists() and fake.uploads == 0


def test_repeated_texts_are_counted_and_said(ragbench, fake, tmp_path):
    data = corpus(tmp_path, ["same text", "same text", "other text", "same text"])
    code, _, err = ragbench("ingest", "--dataset", data, "-t", f"openwebui@{fake.url}", "--out", tmp_path / "o")
    assert code == 0, err
    assert "2 of 4 documents repeat another's text: 2 distinct texts are ingested" in err
    results = read_results(tmp_path / "o" / "results.jsonl")
    assert results.header.dataset["documents"] == 4
    assert (results.header.dataset["distinct_texts"], results.header.dataset["identical_copies"]) == (2, 2)
    assert results.ingest_points[0].documents == 2 and fake.uploads == 2
    report = (tmp_path / "o" / "report.md").read_text()
    assert "2 of them repeat another's text: 2 distinct texts were ingested" in report


def test_the_answer_and_each_combinations_figures_are_printed(ragbench, fake, tmp_path):
    data = corpus(tmp_path, ["one text", "another text"])
    args = ["-t", f"openwebui@{fake.url}", "--setting", "CHUNK_SIZE=100,200", "--out", tmp_path / "o"]
    code, out, err = ragbench("ingest", "--dataset", data, *args)
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith(("│ 100 ", "│ 200 "))]
    assert len(rows) == 2 and all(" ok " in row and " 2 of 2 " in row for row in rows), out
    assert f"openwebui@{fake.url}: recommended CHUNK_SIZE=" in out and "LOST" not in out


def test_a_run_that_measured_nothing_says_so_and_exits_3(ragbench, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test-key")
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    lossy = FakeOpenWebUI(lose_all=True)  # every file accepted, none listed with its vectors
    try:
        data = corpus(tmp_path, ["one text", "another text"])
        code, out, err = ragbench("ingest", "--dataset", data, "-t", f"openwebui@{lossy.url}", "--out", tmp_path / "o")
    finally:
        lossy.close()
    assert code == 3, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"ragbench: error: nothing was measured: openwebui@{lossy.url} default: of 2 documents")
    assert "0 failed and 2 were lost (first: d0: not listed as processed afterwards)" in last
    assert f"LOST: openwebui@{lossy.url} default: 0 failed and 2 lost of 2 documents" in out  # said, not only reported
    assert read_results(tmp_path / "o" / "results.jsonl").ingest_points[0].lost == 2
    assert (tmp_path / "o" / "report.html").exists()


def meter_args(upstream: str) -> list[str]:
    return ["--meter-upstream", upstream, "--meter-port", str(free_port())]


@pytest.mark.parametrize(
    ("upstream", "message"),
    [
        ("llm={url}", "--meter-upstream: Open WebUI's embedding calls go through the meter's embedding route"),
        ("http://127.0.0.1:1", "cannot reach"),  # nothing listens there: every document would fail
        ("{url}", "sends its embedding calls to http://embedder, not to the meter: point its embedding base URL"),
    ],
    ids=["no-embedding-route", "upstream-unreachable", "app-not-pointed-at-the-meter"],
)
def test_a_meter_the_app_cannot_be_measured_through_is_one_line_before_anything(
    ragbench, fake, tmp_path, upstream, message
):
    data = corpus(tmp_path, ["one text"])
    args = ["-t", f"openwebui@{fake.url}", *meter_args(upstream.format(url=fake.url)), "--out", tmp_path / "o"]
    code, _, err = ragbench("ingest", "--dataset", data, "--setting", "CHUNK_SIZE=100,200", *args)
    assert code == 2 and message in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "o").exists() and fake.uploads == 0 and fake.knowledge == {}
    assert not list((tmp_path / "cache").glob("restore/*.json"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_combination_leaves_nothing_on_the_server(ragbench, fake, tmp_path, signum):
    data = corpus(tmp_path, [f"text {i}" for i in range(6)])
    before = fake.settings()
    fake.on_upload = lambda count: count == 8 and os.kill(os.getpid(), signum)  # in the second combination
    args = ["-t", f"openwebui@{fake.url}?concurrency=2", "--setting", "CHUNK_SIZE=100,200", "--out", tmp_path / "o"]
    code, _, err = ragbench("ingest", "--dataset", data, *args)
    assert code == 128 + signum, err
    assert fake.knowledge == {} and fake.files == {}  # the unfinished combination's knowledge base went too
    assert fake.settings() == before
    assert [p.label for p in read_results(tmp_path / "o" / "results.jsonl").ingest_points] == ["CHUNK_SIZE=100"]


def test_a_killed_runs_settings_are_put_back_and_said_as_settings(ragbench, fake, tmp_path):
    journal = SettingsJournal("openwebui", fake.url).path
    journal.parent.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()  # the killed ingest's process: gone
    journal.write_text(json.dumps({"server": fake.url, "pid": dead.pid, "saved": {"CHUNK_SIZE": 1000}}))
    fake.retrieval["CHUNK_SIZE"] = 40  # what the killed run left
    data = corpus(tmp_path, ["one text"])
    code, _, err = ragbench("ingest", "--dataset", data, "-t", f"openwebui@{fake.url}", "--out", tmp_path / "o")
    assert code == 0, err
    assert f"restored the settings an interrupted run left on {fake.url}: CHUNK_SIZE=1000\n" in err
    assert fake.retrieval["CHUNK_SIZE"] == 1000 and not journal.exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("RELEVANCE_THRESHOLD=0.5,nan", "--setting RELEVANCE_THRESHOLD=nan: expected a finite number"),
        ("RAG_EMBEDDING_BATCH_SIZE=2,02", "--setting RAG_EMBEDDING_BATCH_SIZE: 2 and 02 are the same value (2) once"),
    ],
)
def test_a_value_the_server_cannot_take_is_one_line_before_anything(ragbench, fake, tmp_path, setting, message):
    before = fake.settings()
    data = corpus(tmp_path, ["one text"])
    args = ["-t", f"openwebui@{fake.url}", "--setting", setting, "--out", tmp_path / "o"]
    code, _, err = ragbench("ingest", "--dataset", data, *args)
    assert code == 2 and message in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "o").exists() and fake.uploads == 0 and fake.settings() == before
