"""An Open WebUI target on a corpus with empty documents (Cranfield has two): the server refuses them (HTTP 400
"The content provided is empty"), so they are skipped before upload, counted and said, not the end of the run."""

from __future__ import annotations

from bench.datasets.model import Dataset, Document
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.openwebui_fake import FakeOpenWebUI


def test_empty_documents_are_skipped_counted_and_said(monkeypatch, capsys):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    fake = FakeOpenWebUI()
    texts = {"d1": "Marie Curie studied radioactivity.", "d2": "", "d3": "Vesuvius buried Pompeii.", "d4": "  \n"}
    corpus = {doc_id: Document(doc_id, "", text) for doc_id, text in texts.items()}
    data = Dataset("empties", corpus, {"q": "Curie"}, {"q": {"d1": 1}}, source="test", format="beir")
    target = build_target(parse_target_spec(f"openwebui:vector@{fake.url}"), TargetOptions())
    try:
        target.prepare(data, no_progress)
        ingest = target.describe()["ingest"]
    finally:
        target.close()
        fake.close()
    assert (ingest["uploaded"], ingest["failed"], ingest["skipped_empty"]) == (2, 0, 1)  # d2 and d4: one text
    assert sorted(f["meta"]["name"] for f in fake.files.values()) == ["d1.txt", "d3.txt"]
    said = " ".join(capsys.readouterr().err.split())
    assert "1 empty document(s) not uploaded (Open WebUI refuses empty content), so never retrieved: d2" in said


def test_a_second_prepare_says_only_the_empty_document_it_brought(monkeypatch, capsys):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    fake = FakeOpenWebUI()
    corpus = {"d1": Document("d1", "", "Marie Curie studied radioactivity.")}
    grown = corpus | {"d2": Document("d2", "", ""), "d3": Document("d3", "", "Vesuvius buried Pompeii.")}
    target = build_target(parse_target_spec(f"openwebui:vector@{fake.url}?kb=grown"), TargetOptions())
    try:
        for docs in (corpus, grown, grown):  # as grow's rungs: each corpus the last one and more
            target.prepare(
                Dataset("empties", docs, {"q": "Curie"}, {"q": {"d1": 1}}, source="test", format="beir"), no_progress
            )
        ingest = target.describe()["ingest"]
    finally:
        target.close()
        fake.close()
    assert (ingest["skipped_empty"], ingest["skipped_empty_examples"]) == (1, ["d2"])  # noted once, not per prepare
    said = [line for line in capsys.readouterr().err.splitlines() if "empty document" in line]
    assert len(said) == 1 and said[0].endswith("never retrieved: d2"), said  # at the second prepare, not the third
