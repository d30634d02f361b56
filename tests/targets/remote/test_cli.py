"""`ragbench quality` with both remote targets next to a local engine: one command, one results file
holding server facts, latency and cost per target, and no key anywhere in the output."""

from __future__ import annotations

import json

import pytest
from remote_helpers import TINY

from tests.harness.beir import write_dataset
from tests.harness.cli import run_cli_process

pytestmark = pytest.mark.integration


def test_quality_compares_remote_targets_with_a_local_engine(tmp_path, openwebui_server, lightrag_server, meter_url):
    data = write_dataset(tmp_path / "data", TINY)
    out = tmp_path / "out"
    targets = [
        "bm25",
        f"openwebui:vector@{openwebui_server.url}?kb=ragbench-test-cli",
        f"lightrag:mix@{lightrag_server.url}?meter={meter_url}",
    ]
    argv = [
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
    ]
    for target in targets:
        argv += ["-t", target]
    env = {"OPENWEBUI_API_KEY": openwebui_server.api_key, "LIGHTRAG_API_KEY": lightrag_server.api_key}
    done = run_cli_process(argv, env=env, timeout=600)
    assert done.returncode == 0, done.stderr

    text = (out / "results.jsonl").read_text()
    everything = (done.stdout + done.stderr).encode() + b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    for key in (openwebui_server.api_key, lightrag_server.api_key):
        assert key.encode() not in everything
    records = {r["name"]: r for r in map(json.loads, text.splitlines()) if r.get("record") == "target"}
    owui, lightrag = records["openwebui:vector?kb=ragbench-test-cli"], records[f"lightrag:mix?meter={meter_url}"]
    for record in (owui, lightrag):
        assert record["status"] == "ok" and record["errors"] == 0 and record["queries"] == 2
        assert record["latency_ms"]["p50"] > 0 and "p99" in record["latency_ms"]
    assert owui["config"]["server_version"] == "0.12.4"
    assert owui["config"]["retrieval_config"]["CHUNK_SIZE"] == 1000
    assert lightrag["config"]["server_version"]["core_version"] == "1.5.7"
    assert lightrag["config"]["health"]["configuration"]["embedding_model"]
    assert lightrag["cost"]["llm_calls"] == 1.0  # mix: one keyword-extraction call per query
