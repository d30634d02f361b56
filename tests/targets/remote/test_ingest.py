"""`ragbench ingest` against the real Open WebUI 0.12.4 and infinity: the settings swept and restored, texts per
call as the meter counted them equal to the batch setting (and its --record trace holding the same calls), 429s above
N in flight seen and counted, a killed run's settings restored by the next run, the app against the embedder alone
measured in the same run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.endpoints.meter_trace import read_trace
from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.openwebui import admin_client
from tests.harness.process import free_port
from tests.harness.stubs import JsonStub, RawBody, Seen, Whole
from tests.paths import REPO

pytestmark = pytest.mark.integration

EMBEDDING = "/api/v1/retrieval/embedding"
RETRIEVAL = "/api/v1/retrieval/config"

# Just long enough for more than 32 chunks each at CHUNK_SIZE=40, what the batch test asserts: Open WebUI
# 0.12.4's RecursiveCharacterTextSplitter cuts 31 sentences into 34 chunks (33 distinct in d0), 40 into 44.
# Each chunk is an embedding call at batch size 1: no more than the assertion needs.
SENTENCES = 31
DOCS = {
    f"d{i}": " ".join(f"Sentence {j} of document {i} is on topic {i * j % 7}." for j in range(SENTENCES))
    for i in range(2)
}

SMALL_CHUNKS = ("--setting", "CHUNK_SIZE=40", "--setting", "CHUNK_OVERLAP=0")


def settings(client: httpx.Client) -> dict:
    embedding = client.get(EMBEDDING).json()
    retrieval = client.get(RETRIEVAL).json()
    return {
        **{k: embedding[k] for k in ("RAG_EMBEDDING_BATCH_SIZE", "RAG_EMBEDDING_CONCURRENT_REQUESTS")},
        "url": embedding["openai_config"]["url"],
        **{k: retrieval[k] for k in ("CHUNK_SIZE", "CHUNK_OVERLAP")},
    }


@pytest.fixture
def through_port(openwebui_server) -> Iterator[int]:  # type: ignore[no-untyped-def]
    """Open WebUI's embedding base URL pointed at a port where the test's ingest meter will listen, as a user
    points it; put back afterwards."""
    port = free_port()
    with admin_client(openwebui_server) as client:
        form = client.get(EMBEDDING).json()
        before = form["openai_config"]["url"]
        changed = {**form, "openai_config": {**form["openai_config"], "url": f"http://127.0.0.1:{port}/embedding"}}
        client.post(f"{EMBEDDING}/update", json=changed).raise_for_status()
        try:
            yield port
        finally:
            back = client.get(EMBEDDING).json()
            client.post(
                f"{EMBEDDING}/update", json={**back, "openai_config": {**back["openai_config"], "url": before}}
            ).raise_for_status()


class LimitedEmbedder:
    """Forwards to infinity, answering 429 while `limit` calls are already in flight, as a rate-limited TEI does.
    On loopback: Open WebUI, a process of its own, calls it."""

    def __init__(self, upstream: str, limit: int):
        self.upstream, self.limit = upstream, limit
        self.refused = 0
        self.in_flight = 0
        self.lock = threading.Lock()
        self.server = JsonStub({}, default=Whole(self._forward))
        self.url = self.server.url

    def _forward(self, seen: Seen) -> tuple[int, RawBody]:
        with self.lock:
            admitted = self.in_flight < self.limit
            self.in_flight += admitted
            self.refused += not admitted
        if not admitted:
            return 429, RawBody("application/json", b'{"error": "too many requests"}')
        try:
            time.sleep(0.05)  # a GPU's queue: calls overlap long enough to be counted
            reply = httpx.post(
                f"{self.upstream}{seen.path}",
                content=seen.body,
                timeout=60,
                headers={"Content-Type": "application/json"},
            )
            return reply.status_code, RawBody("application/json", reply.content)
        finally:
            with self.lock:
                self.in_flight -= 1

    def close(self) -> None:
        self.server.stop()


def ingest_argv(data: Path, server_url: str, out: Path, port: int, upstream: str, *sweep: str) -> list[str]:
    return [
        sys.executable, "-m", "bench", "ingest", "--dataset", str(data), "--out", str(out),
        "-t", f"openwebui@{server_url}?concurrency=1", "--meter-upstream", upstream, "--meter-port", str(port),
        *sweep,
    ]  # fmt: skip


def run_ingest(argv: list[str], key: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENWEBUI_API_KEY": key, "PYTHONPATH": str(REPO), "RAGBENCH_CACHE": str(cache)}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def test_batch_setting_is_what_the_embedder_sees_and_settings_come_back(
    tmp_path, openwebui_server, infinity_server, through_port
):
    data = write_beir(tmp_path / "data", DOCS, {"q1": "topic"}, [("q1", "d1", 1)])
    with admin_client(openwebui_server) as client:
        before = settings(client)
        done = run_ingest(
            ingest_argv(
                data, openwebui_server.url, tmp_path / "out", through_port, infinity_server.url,
                "--setting", "RAG_EMBEDDING_BATCH_SIZE=1,32", *SMALL_CHUNKS, "--record", str(tmp_path / "trace.jsonl"),
            ),
            openwebui_server.api_key,
            tmp_path / "cache",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert settings(client) == before
    results = read_results(tmp_path / "out" / "results.jsonl")
    points = {p.settings["RAG_EMBEDDING_BATCH_SIZE"]: p for p in results.ingest_points}
    assert set(points) == {1, 32}
    for batch, point in points.items():
        assert (point.status, point.processed, point.lost, point.failed) == ("ok", len(DOCS), 0, 0)
        embedding = point.calls["embedding"]
        assert embedding.texts_per_call_max == batch  # every document has more than 32 chunks at CHUNK_SIZE=40
        assert embedding.texts > 32 * len(DOCS)
        assert point.chunks is not None and 0 < point.chunks <= embedding.texts  # distinct texts: repeats once
        assert point.direct is not None and point.direct.failed_calls == 0
        assert 0 < point.direct.calls <= embedding.calls and point.app_over_direct is not None
    assert points[1].calls["embedding"].calls == points[1].calls["embedding"].texts
    summary = results.ingest_summaries[0]
    assert summary.recommended in {p.label for p in points.values()}
    # --record: the ingest meter's trace holds every call it counted, by shape, never a text.
    trace = read_trace(tmp_path / "trace.jsonl")
    assert len(trace) == sum(p.calls["embedding"].calls for p in points.values())
    assert sum(c.texts for c in trace) == sum(p.calls["embedding"].texts for p in points.values())
    assert max(c.texts for c in trace) == 32 and DOCS["d0"].split(".")[0] not in (tmp_path / "trace.jsonl").read_text()


def test_429_above_the_cap_loses_documents_that_a_cap_keeps(tmp_path, openwebui_server, infinity_server, through_port):
    limited = LimitedEmbedder(infinity_server.url, limit=2)
    data = write_beir(tmp_path / "data", DOCS, {"q1": "topic"}, [("q1", "d1", 1)])
    try:
        done = run_ingest(
            ingest_argv(
                data, openwebui_server.url, tmp_path / "out", through_port, limited.url,
                "--setting", "RAG_EMBEDDING_CONCURRENT_REQUESTS=0,2", "--setting", "RAG_EMBEDDING_BATCH_SIZE=4",
                *SMALL_CHUNKS, "--no-direct",
            ),
            openwebui_server.api_key,
            tmp_path / "cache",
        )  # fmt: skip
    finally:
        limited.close()
    results = read_results(tmp_path / "out" / "results.jsonl")
    points = {p.settings["RAG_EMBEDDING_CONCURRENT_REQUESTS"]: p for p in results.ingest_points}
    unlimited, capped = points[0], points[2]
    # A combination that processed no document measured nothing: exit 3 with a line naming it (README), else 0.
    assert done.returncode == (3 if unlimited.processed == 0 else 0), done.stderr
    assert unlimited.failed + unlimited.lost > 0 and unlimited.status == "lost"
    assert (capped.status, capped.failed, capped.lost) == ("ok", 0, 0)
    seen = unlimited.calls["embedding"].by_status.get("429", 0) + capped.calls["embedding"].by_status.get("429", 0)
    assert seen == limited.refused > 0  # the counts equal what the endpoint said
    assert capped.calls["embedding"].by_status.get("429", 0) == 0
    assert results.ingest_summaries[0].recommended == capped.label


def test_sigterm_restores_and_keeps_what_finished_and_a_killed_run_is_restored_by_the_next(
    tmp_path, openwebui_server, infinity_server, through_port
):
    data = write_beir(tmp_path / "data", DOCS, {"q1": "topic"}, [("q1", "d1", 1)])
    cache = tmp_path / "cache"
    env = {**os.environ, "OPENWEBUI_API_KEY": openwebui_server.api_key, "PYTHONPATH": str(REPO),
           "RAGBENCH_CACHE": str(cache)}  # fmt: skip

    def stopped(out: Path, signum: int) -> int:
        """Start a 3-combination sweep, send `signum` once the first combination is written; the exit code."""
        argv = ingest_argv(
            data, openwebui_server.url, out, through_port, infinity_server.url,
            "--setting", "RAG_EMBEDDING_BATCH_SIZE=32,16,8", *SMALL_CHUNKS,
        )  # fmt: skip
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            results = out / "results.jsonl"
            if results.exists() and '"ingest_point"' in results.read_text():
                break
            time.sleep(0.05)
        proc.send_signal(signum)
        return proc.wait(timeout=120)

    with admin_client(openwebui_server) as client:
        before = settings(client)
        assert stopped(tmp_path / "term", signal.SIGTERM) == 143
        assert settings(client) == before and not list((cache / "restore").glob("*.json"))
        kept = read_results(tmp_path / "term" / "results.jsonl")
        assert kept.end is not None and kept.end.status == "interrupted"
        assert [p.settings["RAG_EMBEDDING_BATCH_SIZE"] for p in kept.ingest_points][:1] == [32]

        assert stopped(tmp_path / "kill", signal.SIGKILL) == -signal.SIGKILL  # no `finally` runs
        assert settings(client) != before
        journals = list((cache / "restore").glob("openwebui-*.json"))
        assert len(journals) == 1 and "RAG_EMBEDDING_BATCH_SIZE" in json.loads(journals[0].read_text())["saved"]
        again = run_ingest(
            ingest_argv(data, openwebui_server.url, tmp_path / "again", through_port, infinity_server.url,
                        "--max-docs", "1"),
            openwebui_server.api_key,
            cache,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert "restored the settings an interrupted run left" in again.stdout + again.stderr
        assert settings(client) == before
        assert not list((cache / "restore").glob("*.json"))


def test_a_setting_the_server_lacks_is_one_line_and_changes_nothing(tmp_path, openwebui_server, infinity_server):
    data = write_beir(tmp_path / "data", DOCS, {"q1": "topic"}, [("q1", "d1", 1)])
    with admin_client(openwebui_server) as client:
        before = settings(client)
        done = run_ingest(
            ingest_argv(data, openwebui_server.url, tmp_path / "out", free_port(), infinity_server.url,
                        "--setting", "RAG_EMBEDDING_BATCH_SIZE=8", "--setting", "RAG_EMBEDDING_NOPE=1,2"),
            openwebui_server.api_key,
            tmp_path / "cache",
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.strip().splitlines()[-1].startswith("ragbench: error: --setting RAG_EMBEDDING_NOPE:")
        assert settings(client) == before
