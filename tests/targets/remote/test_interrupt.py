"""SIGTERM while a real Open WebUI target searches: the settings ragbench changed are restored, the
finished local target is kept with its metrics, the `end` record says `interrupted`, exit 143."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest
from remote_helpers import TINY

from bench.results.store import read_results
from bench.targets.openwebui_settings import SETTINGS
from tests.harness.beir import write_dataset
from tests.paths import REPO

pytestmark = pytest.mark.integration


def test_sigterm_mid_search_restores_open_webui_settings(tmp_path, openwebui_server):
    data = write_dataset(tmp_path / "data", TINY)
    out = tmp_path / "out"
    with httpx.Client(
        base_url=openwebui_server.url, headers={"Authorization": f"Bearer {openwebui_server.api_key}"}, timeout=60
    ) as admin:

        def settings() -> dict:
            config = admin.get("/api/v1/retrieval/config").json()
            return {k: config[k] for k in SETTINGS}

        before = settings()
        argv = [
            sys.executable,
            "-m",
            "tests.quality.interrupt_driver",
            "searching-2=SIGTERM",
            "quality",
            "--dataset",
            str(data),
            "--split",
            "test",
            "--out",
            str(out),
            "--depth",
            "10",
            "-m",
            "nDCG@10",
            "-t",
            "bm25",
            "-t",
            f"openwebui:hybrid@{openwebui_server.url}?kb=ragbench-test-interrupt&bm25_weight=0.9",
        ]
        env = {**os.environ, "OPENWEBUI_API_KEY": openwebui_server.api_key, "PYTHONPATH": str(REPO)}
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 143, done.stderr
        assert settings() == before
    results = read_results(out / "results.jsonl")
    assert [t.name for t in results.targets] == ["bm25"] and results.metric("bm25", "ndcg_cut_10") is not None
    assert results.end.status == "interrupted" and "SIGTERM" in results.end.error
    assert "Status: interrupted" in (out / "report.md").read_text()
