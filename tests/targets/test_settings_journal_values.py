"""The settings journal holds settings, each a scalar (issue 49: typed as Settings, not dict[str, object]): a file
whose values are not is refused as unreadable, never sent to the server."""

from __future__ import annotations

import json

import pytest

from bench.core.errors import UserError
from bench.targets import settings_journal
from bench.targets.settings_journal import as_settings, journal_for


@pytest.fixture(autouse=True)
def journal_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(settings_journal, "_OPEN", {})


def test_a_journal_of_scalars_reads_back_as_settings():
    assert as_settings({"CHUNK_SIZE": 1000, "ENABLE_RAG_HYBRID_SEARCH": True, "RAG_RERANKING_MODEL": None}) == {
        "CHUNK_SIZE": 1000,
        "ENABLE_RAG_HYBRID_SEARCH": True,
        "RAG_RERANKING_MODEL": None,
    }


@pytest.mark.parametrize("saved", [{"CHUNK_SIZE": {"value": 1000}}, {"CHUNK_SIZE": [1000]}, ["CHUNK_SIZE"]])
def test_a_journal_whose_values_are_not_settings_is_refused_and_nothing_is_sent(saved):
    journal = journal_for("openwebui", "http://127.0.0.1:8080")
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    journal.path.write_text(json.dumps({"server": journal.server, "pid": 0, "saved": saved}))
    sent: list[object] = []
    with pytest.raises(UserError, match="unreadable"):
        journal.open(sent.append)
    assert sent == []
