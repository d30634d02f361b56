"""`ragbench doctor` against real servers and contract fixtures: one line per finding, exit 1 when wrong."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.doctor.run import DoctorRequest, run_doctor
from tests.conftest import LITELLM_VERSION, _server_env
from tests.harness.cli import run_cli
from tests.harness.process import free_port, start_process, stop_process, wait_healthy
from tests.harness.stubs import JsonStub, RawBody


def _cli(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    return run_cli(["doctor", *args], monkeypatch, capsys)


def _problems(findings) -> list[str]:
    return [f.message for f in findings if not f.ok]


def test_healthy_tei_has_no_problem_and_reports_its_limits(tei_fixture, monkeypatch, capsys):
    server = tei_fixture(max_client_batch_size=16)
    code, out, _ = _cli(["--tei", server.url], monkeypatch, capsys)
    assert code == 0, out
    assert "max_client_batch_size 16" in out
    assert "17 inputs in one request are refused (HTTP 422)" in out
    assert out.strip().endswith("no problems found")


def test_tei_18_refuses_batches_with_413(tei_fixture):
    server = tei_fixture(version="1.8.4", max_client_batch_size=8)
    findings = run_doctor(DoctorRequest(tei=server.url))
    assert any("9 inputs in one request are refused (HTTP 413)" in f.message for f in findings)


def test_tei_with_truncation_off_is_a_problem(tei_fixture, monkeypatch, capsys):
    server = tei_fixture(auto_truncate=False, max_input_length=128)
    code, out, _ = _cli(["--tei", server.url], monkeypatch, capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if line.startswith("[BAD]"))
    assert "truncation is off: an input over 128 tokens is refused (HTTP 422)" in line
    assert "-> fix: start TEI with --auto-truncate" in line


def test_a_server_that_is_not_tei(tei_fixture):
    html = tei_fixture(faults=("html",))
    findings = run_doctor(DoctorRequest(tei=html.url))
    assert _problems(findings) == [
        f"{html.url}/info: answered text/html; charset=utf-8, not JSON: not a reachable TEI server"
    ]


def _openwebui(shared_dir: Path, config: dict, embedding: dict) -> JsonStub:
    """Open WebUI's settings routes answering the recorded bodies, with the fields a test changes."""
    recorded = shared_dir / "recordings" / "openwebui-0.12.4"
    base_config = json.loads((recorded / "retrieval_config.json").read_text())["body"]
    base_embedding = json.loads((recorded / "retrieval_embedding.json").read_text())["body"]
    return JsonStub(
        {
            ("GET", "/api/v1/retrieval/config"): (200, {**base_config, **config}),
            ("GET", "/api/v1/retrieval/embedding"): (200, {**base_embedding, **embedding}),
        }
    )


def _reranker_config(url: str) -> dict:
    return {
        "RAG_RERANKING_ENGINE": "external",
        "RAG_RERANKING_MODEL": "minilm-reranker-standin",
        "RAG_EXTERNAL_RERANKER_URL": url,
        "RAG_EXTERNAL_RERANKER_API_KEY": "rk",
    }


def _embedding_config(url: str, batch: int = 1, concurrency: int = 4) -> dict:
    return {
        "RAG_EMBEDDING_ENGINE": "openai",
        "RAG_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "RAG_EMBEDDING_BATCH_SIZE": batch,
        "RAG_EMBEDDING_CONCURRENT_REQUESTS": concurrency,
        "openai_config": {"url": url, "key": "ek"},
    }


def test_openwebui_healthy_stack(shared_dir, tei_fixture, monkeypatch, capsys):
    embedder, reranker = tei_fixture(), tei_fixture(model_kind="reranker")
    webui = _openwebui(
        shared_dir, _reranker_config(f"{reranker.url}/v1/rerank"), _embedding_config(f"{embedder.url}/v1", batch=16)
    )
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-webui")
    code, out, _ = _cli(["--openwebui", webui.url, "--tei", embedder.url], monkeypatch, capsys)
    webui.stop()
    assert code == 0, out
    assert f"reranker {reranker.url}/v1/rerank answers a Cohere-shaped request" in out
    assert "embedding endpoint answers (batch size 16)" in out
    assert webui.requests[0][2]["Authorization"] == "Bearer sk-webui"
    assert "sk-webui" not in out and "ek" not in out.split()  # keys are used, never printed


def test_openwebui_misconfigurations_each_named_with_a_fix(shared_dir, tei_fixture, monkeypatch):
    embedder, reranker = tei_fixture(max_client_batch_size=32), tei_fixture(model_kind="reranker")
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-webui")
    cases = {
        f"{reranker.url}/rerank": "wrong wire shape",  # TEI's native /rerank gets Open WebUI's Cohere body -> 422
        reranker.url: "has no rerank path (HTTP 404)",  # the URL without its path
        f"http://127.0.0.1:{free_port()}/v1/rerank": "unreachable",
    }
    for url, needle in cases.items():
        webui = _openwebui(
            shared_dir, _reranker_config(url), _embedding_config(f"{embedder.url}/v1", batch=64, concurrency=0)
        )
        findings = run_doctor(DoctorRequest(openwebui=webui.url, tei=embedder.url))
        webui.stop()
        problems = _problems(findings)
        assert any(needle in p and "silently falls back" in p for p in problems), (needle, problems)
        assert any("unlimited concurrent embedding requests" in p for p in problems)
        assert any("RAG_EMBEDDING_BATCH_SIZE=64 is above TEI's max_client_batch_size 32" in p for p in problems)
        assert all(f.fix for f in findings if not f.ok)


def test_openwebui_store_named_with_its_index_or_said_unknown(shared_dir, monkeypatch):
    """Issue 47: the doctor names the vector store and its index where known; Open WebUI 0.12.4 reports neither
    (the recorded config has no VECTOR_DB), so the store is what the URL states, as on a target."""
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-webui")

    def store_line(config: dict, suffix: str = "") -> tuple[bool, str]:
        webui = _openwebui(shared_dir, config, {"RAG_EMBEDDING_ENGINE": ""})
        try:
            findings = run_doctor(DoctorRequest(openwebui=webui.url + suffix))
        finally:
            webui.stop()
        return next((f.ok, f.message) for f in findings if f.message.startswith("vector store"))

    ok, said = store_line({}, "?store=pgvector-halfvec-hnsw")
    assert ok and said == "vector store: pgvector-halfvec-hnsw (stated, not reported by the app); index: halfvec, hnsw"
    ok, said = store_line({})
    assert ok and said.startswith("vector store: unknown: Open WebUI does not report its vector store over its API")
    assert store_line({"VECTOR_DB": "pgvector"}) == (
        True,
        "vector store: pgvector (reported by the app); index settings not stated (e.g. store=pgvector-halfvec-hnsw)",
    )
    ok, said = store_line({"VECTOR_DB": "qdrant"}, "?store=chroma")
    assert not ok and "store=chroma is stated on the target, but the app reports VECTOR_DB=qdrant" in said


def test_openwebui_without_key_is_one_clear_problem(monkeypatch, capsys):
    monkeypatch.delenv("OPENWEBUI_API_KEY", raising=False)
    code, out, _ = _cli(["--openwebui", "http://127.0.0.1:9"], monkeypatch, capsys)
    assert code == 1 and "[BAD] openwebui: no API key in $OPENWEBUI_API_KEY" in out


def test_lightrag_base64_rejected_and_reranker_without_path(tei_fixture):
    rejecting = JsonStub({("POST", "/v1/embeddings"): (422, {"detail": "encoding_format: base64 is not supported"})})
    reranker = tei_fixture(model_kind="reranker")
    config = {
        "embedding_binding": "openai",
        "embedding_binding_host": f"{rejecting.url}/v1",
        "embedding_model": "m",
        "enable_rerank": True,
        "rerank_binding": "cohere",
        "rerank_model": "r",
        "rerank_binding_host": reranker.url,
    }
    lightrag = JsonStub({("GET", "/health"): (200, {"status": "healthy", "configuration": config})})
    findings = run_doctor(DoctorRequest(lightrag=lightrag.url))
    rejecting.stop()
    lightrag.stop()
    problems = _problems(findings)
    assert any(p.startswith("encoding_format=base64 rejected") for p in problems), problems
    assert any("has no rerank path (HTTP 404)" in p for p in problems), problems


def test_cli_needs_a_target_and_http_urls(monkeypatch, capsys):
    code, _, err = _cli([], monkeypatch, capsys)
    assert (
        code == 2
        and err.strip() == "ragbench: error: doctor: give at least one of --openwebui, --tei, --litellm, --lightrag"
    )
    code, _, err = _cli(["--tei", "localhost:3000"], monkeypatch, capsys)
    assert code == 2 and "--tei 'localhost:3000' is not an http(s) URL" in err


@pytest.mark.integration
def test_litellm_healthy_proxy(litellm_server, monkeypatch, capsys):
    monkeypatch.setenv("LITELLM_API_KEY", os.environ[litellm_server.key_env])
    code, out, _ = _cli(["--litellm", litellm_server.url], monkeypatch, capsys)
    assert code == 0, out
    assert f"{litellm_server.rerank_model}: rerank answers and honours top_n" in out
    assert f"{litellm_server.embed_model}: embeddings answer" in out


@pytest.fixture(scope="module")
def misconfigured_litellm(infinity_server, minilm_backend, server_logs):
    """A real LiteLLM with three rerank providers: cohere/ at infinity (no /v2/rerank there: fails), cohere/ at a
    Cohere-shaped route (works), huggingface/ at a TEI reranker (works, but LiteLLM does not trim to top_n)."""
    from tests.harness.tei_fixture import start_fixture

    tei = start_fixture(minilm_backend, model_kind="reranker")
    key = "sk-doctor-" + os.urandom(6).hex()
    env_dir = _server_env("litellm", LITELLM_VERSION, "litellm.sh")
    config = server_logs / "litellm-misconfigured.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: cohere-at-infinity\n"
        f"    litellm_params: {{model: cohere/{infinity_server.rerank_model}, api_base: '{infinity_server.url}', "
        "api_key: none}\n"
        "    model_info: {mode: rerank}\n"
        "  - model_name: cohere-at-cohere-route\n"
        f"    litellm_params: {{model: cohere/{infinity_server.rerank_model}, api_base: '{tei.url}', api_key: none}}\n"
        "    model_info: {mode: rerank}\n"
        "  - model_name: hf-at-tei\n"
        f"    litellm_params: {{model: huggingface/{infinity_server.rerank_model}, api_base: '{tei.url}', "
        "api_key: none}\n"
        "    model_info: {mode: rerank}\n"
        f"general_settings: {{master_key: {key}}}\n"
    )
    port = free_port()
    proc = start_process(
        "litellm-misconfigured",
        [str(env_dir / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        server_logs / "litellm-misconfigured.log",
        env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, f"{url}/health/liveliness", deadline_s=120)
        yield url, key, tei
    finally:
        stop_process(proc)
        tei.stop()


@pytest.mark.integration
def test_litellm_reranker_configured_but_failing_and_top_n_ignored(misconfigured_litellm, monkeypatch, capsys):
    url, key, _ = misconfigured_litellm
    monkeypatch.setenv("LITELLM_API_KEY", key)
    code, out, _ = _cli(["--litellm", url], monkeypatch, capsys)
    assert code == 1
    bad = [line for line in out.splitlines() if line.startswith("[BAD]")]
    assert any("cohere-at-infinity: rerank fails (HTTP" in b and "fails silently" in b for b in bad), out
    assert "[ok ] litellm: cohere-at-cohere-route: rerank answers and honours top_n" in out
    assert any("hf-at-tei: rerank ignored top_n=1 (3 results)" in b for b in bad), out


@pytest.mark.integration
def test_litellm_cohere_provider_identity_with_the_reference(
    misconfigured_litellm, infinity_server, tmp_path, monkeypatch
):
    """LiteLLM's cohere/ provider in front of a Cohere-shaped route gives the reference's scores."""
    from bench.endpoints import parse_endpoint_spec
    from bench.identity import IdentityRequest, from_texts, run_identity

    url, key, _ = misconfigured_litellm
    monkeypatch.setenv("RAGBENCH_TEST_DOCTOR_KEY", key)
    texts = tmp_path / "texts.txt"
    texts.write_text(
        "\n".join(
            f"short text {i} about {w}" for i, w in enumerate(["cats", "bread", "rome", "light", "trade", "mats"])
        )
        + "\n"
    )
    specs = [
        f"ref=reference-rerank?model={infinity_server.rerank_model_path}",
        f"lite=cohere@{url}/v1?model=cohere-at-cohere-route&key_env=RAGBENCH_TEST_DOCTOR_KEY",
    ]
    report = run_identity(IdentityRequest([parse_endpoint_spec(s) for s in specs], from_texts(texts)))
    assert report.rerank_pairs[0].verdict == "pass" and report.rerankers["lite"].top_n_honoured


_HTML = RawBody("text/html", b"<html><body>Bad gateway</body></html>")


@pytest.mark.parametrize(
    "garbage",
    [
        ("openwebui", "/api/v1/retrieval/config", _HTML),
        ("openwebui", "/api/v1/retrieval/embedding", [1, 2]),
        (
            "openwebui",
            "/api/v1/retrieval/embedding",
            {"RAG_EMBEDDING_ENGINE": "openai", "openai_config": "not an object", "RAG_EMBEDDING_BATCH_SIZE": "many"},
        ),
        ("lightrag", "/health", {"configuration": {"embedding_binding": "openai", "embedding_binding_host": 7}}),
        ("lightrag", "/health", RawBody("application/json", b'{"configuration": {"enable_re')),
        ("tei", "/info", {"model_id": "m", "max_client_batch_size": "lots", "model_type": "embedding"}),
    ],
)
def test_garbage_from_a_hop_is_a_finding_not_a_traceback(garbage, shared_dir, monkeypatch, capsys):
    hop, path, body = garbage
    recorded = shared_dir / "recordings" / "openwebui-0.12.4"
    routes = {
        ("GET", "/api/v1/retrieval/config"): (
            200,
            json.loads((recorded / "retrieval_config.json").read_text())["body"],
        ),
        ("GET", "/api/v1/retrieval/embedding"): (
            200,
            json.loads((recorded / "retrieval_embedding.json").read_text())["body"],
        ),
        ("GET", path): (200, body),
    }
    stub = JsonStub(routes)
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-webui")
    try:
        code, out, err = _cli([f"--{hop}", stub.url], monkeypatch, capsys)
    finally:
        stub.stop()
    assert code in (0, 1) and "Traceback" not in out + err, out + err
    assert out.strip().splitlines() and all(
        line.startswith(("[ok ]", "[BAD]")) for line in out.strip().splitlines()[:-1]
    )
