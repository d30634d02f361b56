"""`ragbench ingest` end to end on a fake Open WebUI (tests/harness/openwebui_fake.py): a target's name kept in the
results, a server or name given twice refused, a corpus with repeated texts said."""

from __future__ import annotations

import pytest

from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.openwebui_fake import FakeOpenWebUI


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
