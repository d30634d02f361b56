"""Bad input and faults end in one clear line, exit code 2, what ragbench created so far, and the
finished work kept in the results file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from remote_helpers import TINY

from bench.core.errors import ServerError
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.beir import write_dataset
from tests.harness.cli import run_cli_process
from tests.harness.lightrag import Providers, start_lightrag
from tests.harness.process import free_port, stop_process
from tests.harness.stubs import JsonStub

pytestmark = pytest.mark.integration


def quality(tmp_path: Path, target: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
    """`ragbench quality` with a local engine first (its work must survive) and then `target`."""
    data = write_dataset(tmp_path / "data", TINY)
    out = tmp_path / "out"
    argv = [
        "quality",
        "--dataset",
        str(data),
        "--split",
        "test",
        "-t",
        "bm25",
        "-t",
        target,
        "--out",
        str(out),
        "--depth",
        "10",
        "-m",
        "nDCG@10",
    ]
    done = run_cli_process(argv, env=env, timeout=300)
    return done, out


def assert_one_line_failure(done: subprocess.CompletedProcess, out: Path, *phrases: str, secret: str = "") -> None:
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    # Progress bars share stderr; the failure itself is one last line, no traceback.
    errors = [line for line in lines if line.startswith("ragbench:")]
    assert errors == [lines[-1]] and "Traceback" not in done.stderr, done.stderr
    assert errors[0].startswith("ragbench: error:")
    for phrase in phrases:
        assert phrase in errors[0]
    if secret:
        assert secret not in done.stderr + done.stdout + (out / "results.jsonl").read_text()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert any(r.get("name") == "bm25" and r.get("status") == "ok" for r in records)  # finished work kept
    assert records[-1].get("status") == "failed"


def test_unreachable_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    done, out = quality(tmp_path, f"openwebui:vector@{url}", {"OPENWEBUI_API_KEY": "sk-anything"})
    assert_one_line_failure(done, out, "cannot connect", url)


def test_wrong_key_open_webui(tmp_path, openwebui_server):
    wrong = "sk-wrong-" + os.urandom(6).hex()
    done, out = quality(tmp_path, f"openwebui:vector@{openwebui_server.url}", {"OPENWEBUI_API_KEY": wrong})
    assert_one_line_failure(done, out, "HTTP 401", "OPENWEBUI_API_KEY", secret=wrong)


def test_wrong_key_lightrag(tmp_path, lightrag_server):
    wrong = "lr-wrong-" + os.urandom(6).hex()
    done, out = quality(tmp_path, f"lightrag:naive@{lightrag_server.url}", {"LIGHTRAG_API_KEY": wrong})
    assert_one_line_failure(done, out, "was refused", "LIGHTRAG_API_KEY", secret=wrong)


# An older server's surface: its version and health routes answer (GET or POST), newer routes are 404.
OLD_SERVER = {
    (method, path): (200, body)
    for method in ("GET", "POST")
    for path, body in {
        "/api/version": {"version": "0.1.0"},
        "/health": {"status": "healthy", "core_version": "1.0.0", "configuration": {}},
        "/documents/status_counts": {"status_counts": {}},
    }.items()
}


@pytest.mark.parametrize("kind", ["openwebui:vector", "lightrag:naive"])
def test_endpoint_missing_in_an_older_server(kind, tmp_path):
    server = JsonStub(OLD_SERVER)  # on loopback: the command runs as a process of its own
    try:
        done, out = quality(tmp_path, f"{kind}@{server.url}", {"OPENWEBUI_API_KEY": "sk-x", "LIGHTRAG_API_KEY": "k"})
    finally:
        server.stop()
    assert_one_line_failure(done, out, "HTTP 404", "no such endpoint (an older version?)")


def test_server_dying_mid_ingest_names_what_was_created(
    tmp_path, meter_url, infinity_server, server_logs, scifact_slice, monkeypatch
):
    """A LightRAG of its own, stopped by its PID once the first document is processed."""
    providers = Providers(f"{meter_url}/llm", "llm-double", f"{meter_url}/embedding", infinity_server.embed_model, 384)
    proc, server = start_lightrag(tmp_path / "dying", server_logs / "lightrag-dying.log", providers)
    monkeypatch.setenv("LIGHTRAG_API_KEY", server.api_key)
    try:

        def kill_on_first_progress(description: str, total: int | None):
            return lambda n: stop_process(proc)

        target = build_target(parse_target_spec(f"lightrag:naive@{server.url}?batch=20"), TargetOptions())
        try:
            with pytest.raises(ServerError) as failure:
                target.prepare(scifact_slice, kill_on_first_progress)
        finally:
            target.close()
    finally:
        stop_process(proc)
    message = str(failure.value)
    assert "cannot connect" in message
    assert "document(s) inserted into LightRAG" in message
    assert failure.value.created and server.api_key not in message
