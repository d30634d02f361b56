"""The vector store behind an Open WebUI target is part of its identity (issue 47): `store=NAME` on the spec is
checked, named in the target's name and recorded in `config.store`; a store the app reports is read, and a
statement it contradicts stops the run before anything is uploaded."""

from __future__ import annotations

import pytest

from bench.core.errors import ServerError, UserError
from bench.datasets.model import Dataset, Document
from bench.results.schema.run import record_store
from bench.targets.base import no_progress
from bench.targets.openwebui_store import NOT_REPORTED
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.openwebui_fake import FakeOpenWebUI
from tests.harness.records import target_record

DATA = Dataset(
    "tiny",
    {"d1": Document("d1", "", "Marie Curie studied radioactivity.")},
    {"q": "Curie"},
    {"q": {"d1": 1}},
    source="test",
    format="beir",
)


def _prepared(spec: str, fake: FakeOpenWebUI) -> dict:
    target = build_target(parse_target_spec(spec), TargetOptions())
    try:
        target.prepare(DATA, no_progress)
        return target.describe()
    finally:
        target.close()


def test_a_stated_store_is_in_the_name_and_the_record(monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    fake = FakeOpenWebUI()
    spec = f"openwebui:vector@{fake.url}?store=pgvector-halfvec-hnsw"
    try:
        described = _prepared(spec, fake)
    finally:
        fake.close()
    assert parse_target_spec(spec).name == "openwebui:vector?store=pgvector-halfvec-hnsw"
    assert described["store"] == {
        "name": "pgvector-halfvec-hnsw",
        "kind": "pgvector",
        "index": "halfvec, hnsw",
        "source": "stated",
        "app_reported": None,
    }
    assert record_store(target_record("owui", config=described)) == "pgvector-halfvec-hnsw"


def test_no_store_stated_records_that_the_app_does_not_report_it(monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    fake = FakeOpenWebUI()
    try:
        described = _prepared(f"openwebui:vector@{fake.url}", fake)
    finally:
        fake.close()
    assert described["store"] == {"name": None, "source": None, "note": NOT_REPORTED}


def test_a_store_the_app_reports_is_read_and_a_contradiction_stops_the_run(monkeypatch):
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    fake = FakeOpenWebUI()
    fake.retrieval["VECTOR_DB"] = "pgvector"  # a later version might report it; 0.12.4 does not
    try:
        assert _prepared(f"openwebui:vector@{fake.url}", fake)["store"]["name"] == "pgvector"
        assert _prepared(f"openwebui:vector@{fake.url}?store=pgvector-halfvec-hnsw", fake)["store"] == {
            "name": "pgvector-halfvec-hnsw",
            "kind": "pgvector",
            "index": "halfvec, hnsw",
            "source": "stated",
            "app_reported": "pgvector",
        }
        files = len(fake.files)
        with pytest.raises(ServerError, match="store=chroma is stated on the target, but the app reports VECTOR_DB"):
            _prepared(f"openwebui:vector@{fake.url}?store=chroma&kb=other", fake)
        assert len(fake.files) == files  # nothing uploaded to the new knowledge base
    finally:
        fake.close()


@pytest.mark.parametrize("value", ["Chroma", "pg vector", "", "-x", "a/b"])
def test_a_store_name_that_is_no_name_is_one_line(value):
    with pytest.raises(UserError, match="is no store name"):
        parse_target_spec(f"openwebui:vector@http://127.0.0.1:1?store={value}")
