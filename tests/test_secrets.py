"""Secrets planted wherever a user could put one never come out: not in any file a command writes, not
on stdout or stderr. Places: target spec parameters, URL userinfo, keys from the environment that a
(fake) server echoes back in its error bodies; commands: quality, evaluate, datasets check, identity,
doctor, meter, report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.errors import ServerError
from bench.secrets import secret_from_env
from bench.targets import registry
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
ENV_SECRET = "envsecret-3f9a1c77"
URL_SECRET = "urlsecret-77ab0d"
PARAM_SECRET = "paramsecret-91cd2e"
TOKEN_SECRET = "tokensecret-55ef8a"
SECRETS = (ENV_SECRET, URL_SECRET, PARAM_SECRET, TOKEN_SECRET)


class EchoHandler(BaseHTTPRequestHandler):
    """Answers every request with HTTP 500 and a body that repeats the request's headers and path."""

    def _echo(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        body = json.dumps({"detail": f"cannot serve {self.path}; headers were {dict(self.headers)}"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = _echo

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def echo_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://alice:{URL_SECRET}@127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def env_keys(monkeypatch):
    for name in ("OPENWEBUI_API_KEY", "TEI_KEY", "TEI_API_KEY", "LIGHTRAG_API_KEY", "LITELLM_API_KEY"):
        monkeypatch.setenv(name, ENV_SECRET)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_beir(tmp_path_factory.mktemp("tiny"), {f"d{i}": f"text {i}" for i in range(4)},
                      {f"q{i}": f"query {i}" for i in range(3)}, [(f"q{i}", f"d{i}", 1) for i in range(3)])


class EchoingTarget:
    """Accepts any parameter (so a secret-bearing spec reaches the results) and fails the way a server
    that echoes its key would."""

    def __init__(self, spec, options):
        self.name = spec.name
        self.key = secret_from_env("OPENWEBUI_API_KEY")  # as every target reads its key

    def prepare(self, dataset, progress):
        self.docs = list(dataset.corpus)

    def search(self, queries, depth, progress):
        raise ServerError("echo", f"refused Authorization: Bearer {self.key} (token {self.key})")

    def describe(self):
        return {}

    def close(self):
        pass


def assert_clean(*texts: str, folder: Path | None = None) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"{secret} in output:\n{text}"
    for path in (folder.rglob("*") if folder else []):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} in {path}"


def test_quality_with_secrets_in_specs_urls_and_echoed_keys(tiny, tmp_path, echo_url, env_keys, monkeypatch, capsys):
    monkeypatch.setitem(registry.KINDS, "echo", EchoingTarget)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(["quality", "--dataset", str(tiny), "--out", str(out), "-m", "P@2", "--depth", "4",
                                    "-t", f"echo@{echo_url}?api_key={PARAM_SECRET}&token={TOKEN_SECRET}"], monkeypatch, capsys)
    assert code == 2 and stderr.count("\n") == 1 and "refused Authorization: Bearer ***" in stderr
    assert (out / "report.html").exists() and "echo" in (out / "results.jsonl").read_text()
    assert_clean(stdout, stderr, folder=out)

    # The real HTTP layer: Open WebUI's client against a server that echoes the key it was sent.
    out2 = tmp_path / "out2"
    code, stdout, stderr = run_cli(["quality", "--dataset", str(tiny), "--out", str(out2), "-m", "P@2", "--depth", "4",
                                    "-t", f"openwebui@{echo_url}"], monkeypatch, capsys)
    assert code == 2 and "HTTP 500" in stderr, stderr
    assert_clean(stdout, stderr, folder=out2)

    # A spec parameter a target does not take: refused before anything is written, the value masked.
    code, stdout, stderr = run_cli(["quality", "--dataset", str(tiny), "--out", str(tmp_path / "out3"),
                                    "-t", f"bm25?api_key={PARAM_SECRET}"], monkeypatch, capsys)
    assert code == 2 and "api_key=***" in stderr and not (tmp_path / "out3").exists()
    assert_clean(stdout, stderr)


def test_report_masks_secrets_in_a_results_file(tiny, tmp_path, echo_url, env_keys, monkeypatch, capsys):
    out = tmp_path / "out"
    assert run_cli(["quality", "--dataset", str(tiny), "--out", str(out), "-t", "bm25", "-m", "P@2", "--depth", "4"],
                   monkeypatch, capsys)[0] == 0
    # A results file written by hand or by an older ragbench, with secrets in it.
    lines = (out / "results.jsonl").read_text().splitlines()
    target = json.loads(lines[1])
    target["spec"] = f"bm25@{echo_url}?api_key={PARAM_SECRET}"
    target["config"] = {"token": TOKEN_SECRET, "url": echo_url}
    lines[1] = json.dumps(target)
    end = json.loads(lines[-1])
    end.update(status="failed", error=f"HTTP 401: Authorization: Bearer {ENV_SECRET}")
    lines[-1] = json.dumps(end)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "results.jsonl").write_text("\n".join(lines) + "\n")
    code, stdout, stderr = run_cli(["report", str(planted / "results.jsonl"), "--out", str(tmp_path / "rep")], monkeypatch, capsys)
    assert code == 0, stderr
    assert "Status: failed" in (tmp_path / "rep" / "report.md").read_text()
    assert_clean(stdout, stderr, folder=tmp_path / "rep")


def test_evaluate_and_datasets_check_mask_secrets_in_paths(tmp_path, monkeypatch, capsys):
    code, stdout, stderr = run_cli(["evaluate", f"http://alice:{URL_SECRET}@host/qrels", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and "alice" not in stderr
    assert_clean(stdout, stderr)
    code, stdout, stderr = run_cli(["datasets", "check", f"{tmp_path}/set?token={TOKEN_SECRET}"], monkeypatch, capsys)
    assert code == 2 and "token=***" in stderr
    assert_clean(stdout, stderr)


def test_identity_masks_url_credentials_and_echoed_keys(tmp_path, echo_url, env_keys, monkeypatch, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("one\ntwo\nthree\n")
    code, stdout, stderr = run_cli(["identity", "-e", f"a=tei@{echo_url}?key_env=TEI_KEY", "-e", f"b=tei@{echo_url}",
                                    "--texts", str(texts), "--out", str(tmp_path / "identity.json")], monkeypatch, capsys)
    assert code == 2 and stderr.strip(), stderr
    assert_clean(stdout, stderr, folder=tmp_path)


def test_doctor_masks_url_credentials_and_echoed_keys(tmp_path, echo_url, env_keys, monkeypatch, capsys):
    code, stdout, stderr = run_cli(["doctor", "--tei", echo_url, "--openwebui", echo_url, "--litellm", echo_url,
                                    "--lightrag", echo_url, "--out", str(tmp_path / "doctor.json")], monkeypatch, capsys)
    assert code == 1 and "127.0.0.1" in stdout, stdout + stderr
    assert_clean(stdout, stderr, folder=tmp_path)


def test_meter_masks_upstream_credentials(echo_url, env_keys):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "bench", "meter", "--port", "0", "--upstream", f"llm={echo_url}/v1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline()  # the route line: the proxy is up
        assert "127.0.0.1" in first
        proc.send_signal(subprocess.signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "ragbench: interrupted (SIGINT)" in stderr
    assert_clean(first + stdout, stderr)
