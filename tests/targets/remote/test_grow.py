"""`ragbench grow` against the real Open WebUI 0.12.4 embedding through infinity (MiniLM): one knowledge base per
mode grown in small rungs, each document uploaded once (the files of earlier rungs reused by name and SHA-256),
every rung measured, the retrieval settings put back as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from remote_helpers import lightrag_paths

from bench.results.store import read_results
from bench.targets.openwebui_settings import SETTINGS
from tests.harness.beir import write_beir
from tests.paths import REPO

pytestmark = pytest.mark.integration

RUNGS = (12, 40, 80)  # at most ~200 documents in all: the test suite's rungs are seconds, the benchmark's hours


def settings(url: str, key: str) -> dict[str, Any]:
    config = httpx.get(f"{url}/api/v1/retrieval/config", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return {k: config.json()[k] for k in SETTINGS}


def files_in(url: str, key: str, kb: str) -> int:
    headers = {"Authorization": f"Bearer {key}"}
    bases = httpx.get(f"{url}/api/v1/knowledge/", headers=headers, timeout=60).json()["items"]
    kb_id = next(b["id"] for b in bases if b["name"] == kb)
    listed = httpx.get(f"{url}/api/v1/knowledge/{kb_id}/files", headers=headers, timeout=60).json()
    return int(listed["total"])


def test_vector_and_hybrid_grow_in_place_and_the_settings_come_back(
    ragbench, tmp_path, openwebui_server, openwebui_key
):
    url = openwebui_server.url
    before = settings(url, openwebui_key)
    topics = ["volcano eruption lava", "bread yeast oven", "comet orbit sun", "violin string bow"]
    docs = {f"d{i}": f"A note on {topics[i % 4]} number {i}: {topics[i % 4]} again." for i in range(12)}
    queries = {f"q{i}": topics[i] for i in range(4)}
    data = write_beir(tmp_path / "data", docs, queries, [(f"q{i % 4}", f"d{i}", 1) for i in range(12)])
    targets = ["-t", f"vec=openwebui:vector@{url}?kb=grow-vec", "-t", f"hyb=openwebui:hybrid@{url}?kb=grow-hyb"]
    out = tmp_path / "o"
    rungs = ",".join(map(str, RUNGS))
    code, stdout, err = ragbench("grow", "--dataset", data, *targets, "--rungs", rungs, "--keep", "--out", out)
    assert code == 0, err
    records = read_results(out / "results.jsonl").grow_rungs
    for name in ("vec", "hyb"):
        mine = [r for r in records if r.target == name]
        assert [(r.size, r.ingest_mode) for r in mine] == [(n, "incremental") for n in RUNGS]
        assert all(r.queries == 4 and not r.errors and r.latency_ms["p50"] > 0 for r in mine)
        assert mine[0].metrics["nDCG@10"] > 0.5  # the topics' own notes first, among 12
        assert files_in(url, openwebui_key, f"grow-{name}") == RUNGS[-1]  # each document once (kept: --keep)
    assert settings(url, openwebui_key) == before
    assert "vec: holds to 80 docs, the largest rung measured" in stdout


def test_lightrag_grows_in_place_and_deletes_every_rungs_documents_at_the_end(
    ragbench, tmp_path, lightrag_server, lightrag_key
):
    url = lightrag_server.url
    before = lightrag_paths(url, lightrag_key)
    docs = {f"g{i}": f"Grow note {i}: the comet number {i} orbits the sun every {i + 3} years." for i in range(4)}
    data = write_beir(tmp_path / "data", docs, {"q": "comet number 2 orbit"}, [("q", "g2", 1)])
    out = tmp_path / "o"
    targets = ["-t", f"naive=lightrag:naive@{url}", "-t", f"mix=lightrag:mix@{url}"]
    code, _, err = ragbench("grow", "--dataset", data, *targets, "--rungs", "4,8,12", "--out", out)
    assert code == 0, err
    rungs = read_results(out / "results.jsonl").grow_rungs
    naive = [r for r in rungs if r.target == "naive"]
    # one server, one set of documents: naive's target sends each rung's, mix's finds them listed (no ingest rate)
    assert all(r.docs_per_s is not None for r in naive)
    assert [r.docs_per_s for r in rungs if r.target == "mix"] == [None, None, None]
    assert [(r.size, r.added, r.ingest_mode) for r in naive] == [
        (4, 4, "incremental"),
        (8, 4, "incremental"),
        (12, 4, "incremental"),
    ]
    assert all(r.queries == 1 and not r.errors for r in rungs)
    assert lightrag_paths(url, lightrag_key) == before  # every rung's documents deleted (cleanup=true, no --keep)


KILLED_WITHIN_S = 300  # a subprocess's start and a rung of 8 documents through a CPU embedder on a loaded runner


def test_a_grow_killed_outright_leaves_the_servers_settings_as_they_were_after_the_next_run(
    tmp_path, openwebui_server, openwebui_key
):
    """SIGKILL mid-ladder (hybrid search on, no `finally` runs); the next run against the server (`--resume`) puts
    the killed run's originals back before it reads its own: the server ends as it was, not with hybrid on."""
    url = openwebui_server.url
    before = settings(url, openwebui_key)
    assert before["ENABLE_RAG_HYBRID_SEARCH"] is False  # else the kill would leave nothing to see
    topics = ["volcano eruption lava", "bread yeast oven"]
    docs = {f"k{i}": f"A kill note on {topics[i % 2]} number {i}." for i in range(8)}
    data = write_beir(tmp_path / "data", docs, {"q0": topics[0]}, [("q0", "k0", 1)])
    out, cache = tmp_path / "o", tmp_path / "cache"
    env = {**os.environ, "OPENWEBUI_API_KEY": openwebui_key, "PYTHONPATH": str(REPO), "RAGBENCH_CACHE": str(cache)}
    argv = [sys.executable, "-m", "bench", "grow", "--dataset", str(data), "-t", f"k=openwebui:hybrid@{url}",
            "--rungs", "8,12", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + KILLED_WITHIN_S
    while proc.poll() is None and time.monotonic() < deadline:
        if (out / "results.jsonl").exists() and '"grow_rung"' in (out / "results.jsonl").read_text():
            break  # rung 1 measured: the mode's settings are on the server
        time.sleep(0.05)
    proc.kill()
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert settings(url, openwebui_key)["ENABLE_RAG_HYBRID_SEARCH"] is True
    assert len(list((cache / "restore").glob("openwebui-*.json"))) == 1
    again = subprocess.run([*argv[:-2], "--resume", str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=KILLED_WITHIN_S)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "restored the settings an interrupted run left" in again.stderr
    assert settings(url, openwebui_key) == before
    assert not list((cache / "restore").glob("*.json"))
    assert len(read_results(out / "results.jsonl").grow_rungs) == 2
