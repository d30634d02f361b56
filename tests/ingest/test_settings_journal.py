"""The one settings journal: keyed by the server a URL reaches, not by how the URL spells it; shared by every user
of that server in one process (the first value saved is the original); the last user's close removes it."""

from __future__ import annotations

import json

import pytest

from bench.core.errors import UserError
from bench.targets import settings_journal
from bench.targets.settings_journal import SettingsJournal, journal_for, server_identity


@pytest.fixture(autouse=True)
def journal_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(settings_journal, "_OPEN", {})
    return tmp_path / "cache" / "restore"


@pytest.mark.parametrize(
    "spelling",
    [
        "http://localhost:8080",
        "http://127.0.0.1:8080/",
        "http://LOCALHOST:8080",
        "http://[::1]:8080",
        "http://127.0.0.2:8080",
    ],
)
def test_every_spelling_of_one_server_is_one_journal(spelling):
    """`ingest` through localhost and through 127.0.0.1 had two journals and restored each other's settings."""
    assert server_identity(spelling) == server_identity("http://127.0.0.1:8080") == "local:8080"
    assert SettingsJournal("openwebui", spelling).path == SettingsJournal("openwebui", "http://127.0.0.1:8080").path


def test_another_port_path_or_app_is_another_journal():
    one = SettingsJournal("openwebui", "http://127.0.0.1:8080").path
    assert SettingsJournal("openwebui", "http://127.0.0.1:8081").path != one
    assert SettingsJournal("openwebui", "http://127.0.0.1:8080/webui").path != one
    assert SettingsJournal("lightrag", "http://127.0.0.1:8080").path != one
    assert server_identity("http://no-such-host.invalid:9") == "no-such-host.invalid:9"  # a name not resolved


def test_users_in_one_process_share_it_and_the_first_saved_value_is_the_original(journal_home):
    sent: list[dict[str, object]] = []
    first, second = journal_for("openwebui", "http://localhost:8080"), journal_for("openwebui", "http://127.0.0.1:8080")
    assert first is second
    first.open(sent.append)
    first.save({"ENABLE_RAG_HYBRID_SEARCH": False})
    second.open(sent.append)  # a second mode of the same server, which reads the first mode's live value
    second.save({"ENABLE_RAG_HYBRID_SEARCH": True, "RELEVANCE_THRESHOLD": 0.0})
    on_disk = json.loads(first.path.read_text())["saved"]
    assert on_disk == {"ENABLE_RAG_HYBRID_SEARCH": False, "RELEVANCE_THRESHOLD": 0.0} and sent == []
    second.close(restored=True)
    assert first.path.exists()  # the first user's values are still out
    first.close(restored=True)
    assert not first.path.exists()


def test_a_dead_runs_journal_is_put_back_first_and_a_failed_restore_keeps_it(journal_home, monkeypatch):
    journal = journal_for("openwebui", "http://127.0.0.1:8080")
    journal.open(lambda values: None)
    journal.save({"CHUNK_SIZE": 1000})
    monkeypatch.setattr(settings_journal, "_OPEN", {})  # the run is killed: only its file is left
    sent: list[dict[str, object]] = []
    again = journal_for("openwebui", "http://localhost:8080")
    assert again.open(sent.append) == {"CHUNK_SIZE": 1000} and sent == [{"CHUNK_SIZE": 1000}]
    again.save({"CHUNK_SIZE": 1000})
    again.close(restored=False)  # the server went away before its values were back
    assert json.loads(again.path.read_text())["saved"] == {"CHUNK_SIZE": 1000}


def test_a_live_runs_journal_is_refused_through_another_spelling(journal_home, monkeypatch):
    journal = journal_for("openwebui", "http://127.0.0.1:8080")
    journal.open(lambda values: None)
    journal.save({"CHUNK_SIZE": 1000})
    monkeypatch.setattr(settings_journal, "alive", lambda pid: True)  # as another process that still runs
    monkeypatch.setattr(settings_journal, "_OPEN", {})
    with pytest.raises(UserError, match=r"another ragbench run \(pid \d+\) is changing the settings of http://local"):
        journal_for("openwebui", "http://localhost:8080").open(lambda values: None)
