"""Open WebUI's ingest settings through a fake of its two settings APIs (httpx.MockTransport): a combination
applied and read back, the embedding form sent whole, a refused or ignored update one line, the restore journal
written before the first change and used by the next run."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from typing import Any

import httpx
import pytest

from bench.core.errors import ServerError, UserError
from bench.core.http import HttpClient
from bench.ingest.openwebui_settings import OpenWebUISettings
from bench.ingest.settings import SettingAxis, combinations, label, parse_settings
from bench.targets import settings_journal
from bench.targets.settings_journal import SettingsJournal
from tests.harness.openwebui_fake import EMBEDDER_KEY, embedding_form


class FakeOpenWebUI:
    """The embedding and retrieval settings routes of Open WebUI 0.12.4, as their code reads and writes them."""

    def __init__(self, refuse: bool = False, ignore: bool = False):
        self.embedding = embedding_form()
        self.retrieval: dict[str, Any] = {
            "CHUNK_SIZE": 1000,
            "CHUNK_OVERLAP": 100,
            "RELEVANCE_THRESHOLD": 0.0,
            "web": {"x": 1},
        }
        self.refuse, self.ignore = refuse, ignore
        self.forms: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path == "/api/v1/retrieval/embedding":
            return httpx.Response(200, json={"status": True, **self.embedding})
        if request.method == "GET" and path == "/api/v1/retrieval/config":
            return httpx.Response(200, json={"status": True, **self.retrieval})
        if self.refuse:
            return httpx.Response(500, json={"detail": "Error updating embedding configuration"})
        form = json.loads(request.content)
        self.forms.append(form)
        if self.ignore:
            return httpx.Response(200, json={"status": True})
        if path == "/api/v1/retrieval/embedding/update":
            # The form's defaults stand for any field it lacks (EmbeddingModelUpdateForm).
            self.embedding.update({"RAG_EMBEDDING_BATCH_SIZE": 1, "RAG_EMBEDDING_CONCURRENT_REQUESTS": 0, **form})
        else:
            self.retrieval.update(form)
        return httpx.Response(200, json={"status": True})


@pytest.fixture
def journal_home(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "restore"


def die(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process forgets its open journals, as a run killed outright does: only the file is left."""
    monkeypatch.setattr(settings_journal, "_OPEN", {})


def settings_of(fake: FakeOpenWebUI) -> OpenWebUISettings:
    return OpenWebUISettings(HttpClient("Open WebUI", "http://openwebui", transport=httpx.MockTransport(fake)))


def test_a_combination_is_applied_read_back_and_restored(journal_home):
    fake = FakeOpenWebUI()
    settings = settings_of(fake)
    axes = parse_settings(["RAG_EMBEDDING_BATCH_SIZE=8,32", "CHUNK_SIZE=400"])
    typed = settings.typed(axes)
    assert typed == [[8, 32], [400]]
    back = settings.apply({"RAG_EMBEDDING_BATCH_SIZE": 8, "CHUNK_SIZE": 400})
    assert back == {"RAG_EMBEDDING_BATCH_SIZE": 8, "CHUNK_SIZE": 400}
    # The embedding form went whole: the concurrency and the provider's URL and key stayed as they were.
    assert fake.embedding["RAG_EMBEDDING_CONCURRENT_REQUESTS"] == 0
    assert fake.embedding["openai_config"] == {"url": "http://embedder", "key": EMBEDDER_KEY}
    journal = json.loads(next(journal_home.glob("openwebui-*.json")).read_text())
    assert journal["saved"] == {"RAG_EMBEDDING_BATCH_SIZE": 1, "CHUNK_SIZE": 1000}
    assert EMBEDDER_KEY not in json.dumps(journal)
    settings.apply({"RAG_EMBEDDING_BATCH_SIZE": 32, "CHUNK_SIZE": 400})
    settings.restore()
    assert (fake.embedding["RAG_EMBEDDING_BATCH_SIZE"], fake.retrieval["CHUNK_SIZE"]) == (1, 1000)
    assert not list(journal_home.glob("*.json"))


def test_a_journal_left_by_a_killed_run_is_restored_first(journal_home, monkeypatch):
    fake = FakeOpenWebUI()
    settings_of(fake).apply({"RAG_EMBEDDING_CONCURRENT_REQUESTS": 4})  # and then the process died
    die(monkeypatch)
    assert fake.embedding["RAG_EMBEDDING_CONCURRENT_REQUESTS"] == 4
    restored = settings_of(fake).put_back_left_over()
    assert restored == {"RAG_EMBEDDING_CONCURRENT_REQUESTS": 0}
    assert fake.embedding["RAG_EMBEDDING_CONCURRENT_REQUESTS"] == 0 and not list(journal_home.glob("*.json"))
    die(monkeypatch)
    assert settings_of(fake).put_back_left_over() == {}


def test_an_unknown_name_changes_nothing(journal_home):
    fake = FakeOpenWebUI()
    with pytest.raises(UserError, match="RAG_EMBEDDING_NOPE: Open WebUI at http://openwebui has no such setting"):
        settings_of(fake).typed([SettingAxis("RAG_EMBEDDING_NOPE", ("1",))])
    assert fake.forms == [] and not journal_home.exists()


@pytest.mark.parametrize("fake", [FakeOpenWebUI(refuse=True), FakeOpenWebUI(ignore=True)], ids=["refused", "ignored"])
def test_a_refused_or_ignored_update_is_one_line(journal_home, fake):
    settings = settings_of(fake)
    with pytest.raises(ServerError) as raised:
        settings.apply({"RAG_EMBEDDING_BATCH_SIZE": 8})
    assert "\n" not in str(raised.value)
    assert "did not take RAG_EMBEDDING_BATCH_SIZE=8" in str(raised.value) or "HTTP 500" in str(raised.value)


def test_values_are_typed_by_the_servers_own():
    fake = FakeOpenWebUI()
    settings = settings_of(fake)
    with pytest.raises(UserError, match="expected a whole number"):
        settings.typed([SettingAxis("CHUNK_SIZE", ("big",))])
    with pytest.raises(UserError, match="expected true or false"):
        settings.typed([SettingAxis("ENABLE_ASYNC_EMBEDDING", ("maybe",))])


@pytest.mark.parametrize(
    ("axis", "message"),
    [
        (SettingAxis("RELEVANCE_THRESHOLD", ("0.2", "nan")), "RELEVANCE_THRESHOLD=nan: expected a finite number"),
        (SettingAxis("RELEVANCE_THRESHOLD", ("-inf",)), "expected a finite number"),
        (SettingAxis("RAG_EMBEDDING_BATCH_SIZE", ("2", "02")), "2 and 02 are the same value"),
        (SettingAxis("ENABLE_ASYNC_EMBEDDING", ("true", "on")), "true and on are the same value"),
    ],
)
def test_values_the_server_cannot_take_or_equal_once_typed_are_one_line_before_any_change(journal_home, axis, message):
    fake = FakeOpenWebUI()
    with pytest.raises(UserError, match=message):
        settings_of(fake).typed([axis])
    assert fake.forms == [] and not journal_home.exists()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (["RAG_EMBEDDING_BATCH_SIZE"], "expected NAME=VALUE"),
        (["lower=1"], "expected NAME=VALUE"),
        (["CHUNK_SIZE=1,,2"], "an empty value"),
        (["CHUNK_SIZE=1,1"], "a value given twice"),
        (["CHUNK_SIZE=1", "CHUNK_SIZE=2"], "given twice"),
        (["RAG_OPENAI_API_KEY=x"], "a key or password is not swept"),
        (["A=" + ",".join(map(str, range(9))), "B=" + ",".join(map(str, range(9)))], "81 combinations"),
    ],
)
def test_bad_settings_are_one_line(given, message):
    with pytest.raises(UserError, match=message):
        parse_settings(given)


def test_combinations_and_labels():
    axes = parse_settings(["RAG_EMBEDDING_BATCH_SIZE=1,32", "RAG_EMBEDDING_CONCURRENT_REQUESTS=0,4,8"])
    grid = combinations([a.name for a in axes], [list(a.values) for a in axes])
    assert len(grid) == 6 and grid[1] == {"RAG_EMBEDDING_BATCH_SIZE": "1", "RAG_EMBEDDING_CONCURRENT_REQUESTS": "4"}
    assert label(grid[1]) == "RAG_EMBEDDING_BATCH_SIZE=1 RAG_EMBEDDING_CONCURRENT_REQUESTS=4"
    assert combinations([], []) == [{}] and label({}) == "default"


@pytest.fixture
def live_process():
    """A process other than this one that is alive for the test (as a second ingest would be)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    yield child.pid
    child.stdin.close()  # type: ignore[union-attr]
    child.wait()


def test_a_journal_a_live_ingest_holds_is_left_alone_and_refused(journal_home, live_process, monkeypatch):
    fake = FakeOpenWebUI()
    first = settings_of(fake)
    first.apply({"RAG_EMBEDDING_BATCH_SIZE": 8})  # the first run, mid-combination
    journal = next(journal_home.glob("openwebui-*.json"))
    journal.write_text(json.dumps({**json.loads(journal.read_text()), "pid": live_process}))
    before = journal.read_text()
    die(monkeypatch)
    with pytest.raises(UserError, match=f"another ragbench run \\(pid {live_process}\\) is changing the settings"):
        settings_of(fake).put_back_left_over()
    assert journal.read_text() == before and fake.embedding["RAG_EMBEDDING_BATCH_SIZE"] == 8  # nothing touched
    with pytest.raises(UserError, match="another ragbench run"):
        SettingsJournal("openwebui", "http://openwebui").claim()
    assert journal.read_text() == before


def test_a_run_without_settings_never_removes_a_journal_it_did_not_write(journal_home):
    fake = FakeOpenWebUI()
    settings_of(fake).apply({"CHUNK_SIZE": 400})  # another run's journal, then that run died
    journal = next(journal_home.glob("openwebui-*.json"))
    other = SettingsJournal("openwebui", "http://openwebui")
    other.close(restored=True)  # this one never claimed or read it
    assert journal.exists()


def test_the_journal_holds_the_original_value_for_its_owner_alone(journal_home, monkeypatch):
    fake = FakeOpenWebUI()
    fake.retrieval["TEXT_SPLITTER"] = "http://alice:secret@tika:9998"  # a credential the user set
    settings_of(fake).apply({"TEXT_SPLITTER": "token"})
    journal = next(journal_home.glob("openwebui-*.json"))
    assert json.loads(journal.read_text())["saved"] == {"TEXT_SPLITTER": "http://alice:secret@tika:9998"}
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600  # restoring needs it whole: nobody else may read it
    die(monkeypatch)
    settings_of(fake).put_back_left_over()
    assert fake.retrieval["TEXT_SPLITTER"] == "http://alice:secret@tika:9998"
