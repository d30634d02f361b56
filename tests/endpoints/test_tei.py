"""TEI native routes against the contract fixture, in its 1.9 and its 1.8 behaviour."""

from __future__ import annotations

import threading

import httpx
import numpy as np
import pytest

from bench.core.errors import ServerError
from bench.endpoints import HttpStatusError, open_endpoint, parse_endpoint_spec
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.tei_client import TeiClient, batch_limit
from tests.harness.tei_fixture import HOLD_HEADER

VERSIONS = ["1.9.3", "1.8.4"]
TEXTS = [f"sentence number {i} about topic {i % 7}" for i in range(45)]


@pytest.fixture(scope="module")
def reference_vectors(minilm_backend):
    return minilm_backend.embed(TEXTS, normalize=True, max_tokens=256)


@pytest.mark.parametrize("version", VERSIONS)
def test_embed_splits_at_max_client_batch_size_from_info(tei_fixture, reference_vectors, version):
    server = tei_fixture(version=version, max_client_batch_size=16)
    embedder = open_endpoint(parse_endpoint_spec(f"tei=tei@{server.url}"))
    result = embedder.embed(TEXTS)
    assert [c.inputs for c in result.calls] == [16, 16, 13]
    np.testing.assert_allclose(result.vectors, reference_vectors, atol=1e-6)
    # TEI's timing headers arrive with every call.
    assert {"x-inference-time", "x-queue-time", "x-total-time", "x-compute-tokens"} <= set(result.calls[0].server)
    assert result.calls[0].server["x-compute-tokens"] > 16


@pytest.mark.parametrize(("version", "status"), [("1.9.3", 422), ("1.8.4", 413)])
def test_batch_refusal_is_422_or_413_and_the_client_learns_the_limit(tei_fixture, reference_vectors, version, status):
    # /info hidden (as behind a proxy): the client starts at TEI's default 32 and is told the real limit.
    server = tei_fixture(version=version, max_client_batch_size=10, info_route=False)
    raw = httpx.post(f"{server.url}/embed", json={"inputs": TEXTS[:11]})
    assert raw.status_code == status
    assert raw.json() == {"error": "batch size 11 > maximum allowed batch size 10", "error_type": "Validation"}
    embedder = open_endpoint(parse_endpoint_spec(f"tei=tei@{server.url}"))
    result = embedder.embed(TEXTS)
    assert [c.inputs for c in result.calls] == [10, 10, 10, 10, 5]
    np.testing.assert_allclose(result.vectors, reference_vectors, atol=1e-6)


def test_batch_limit_reads_only_batch_size_refusals():
    assert batch_limit(HttpStatusError("t", 422, "batch size 40 > maximum allowed batch size 32"), 40) == 32
    assert batch_limit(HttpStatusError("t", 413, "batch size 40 > maximum allowed batch size 8"), 40) == 8
    assert batch_limit(HttpStatusError("t", 422, "`inputs` must have less than 512 tokens. Given: 600"), 40) is None
    assert batch_limit(HttpStatusError("t", 424, "batch size 40 > maximum allowed batch size 32"), 40) is None
    # A refusal that names no maximum (a proxy's payload limit, another server's words): half the batch.
    assert batch_limit(HttpStatusError("t", 413, "Payload Too Large"), 40) == 20
    assert batch_limit(HttpStatusError("t", 422, "Batch too large"), 9) == 4


def _hold_permits(server, inputs: int) -> threading.Thread:
    """One request that takes `inputs` permits and keeps them until `server.release` is set; returns once it holds
    them, so the test's next request meets them taken."""
    thread = threading.Thread(
        target=httpx.post,
        args=(f"{server.url}/embed",),
        kwargs={"json": {"inputs": TEXTS[:inputs]}, "headers": {HOLD_HEADER: "1"}, "timeout": 60},
    )
    thread.start()
    assert server.held.wait(timeout=30), "the holding request never took its permits"
    return thread


@pytest.mark.parametrize(("version", "multi_input_status"), [("1.9.3", 429), ("1.8.4", 200)])
def test_overload_takes_a_permit_per_input_since_19(tei_fixture, version, multi_input_status):
    server = tei_fixture(version=version, max_concurrent_requests=4)
    holder = _hold_permits(server, 3)
    try:
        single = httpx.post(f"{server.url}/embed", json={"inputs": TEXTS[:2]}, timeout=30)
        assert single.status_code == multi_input_status
        if multi_input_status == 429:
            assert single.json() == {"error": "Model is overloaded", "error_type": "Overloaded"}
    finally:
        server.release.set()
        holder.join()


def test_client_retries_429_until_a_permit_is_free(tei_fixture, reference_vectors):
    # The held permits are given back at the server's first 429: the client's retry must then succeed.
    server = tei_fixture(max_concurrent_requests=4, release_on_refusal=True)
    holder = _hold_permits(server, 3)
    try:
        result = open_endpoint(parse_endpoint_spec(f"tei=tei@{server.url}?batch=2")).embed(TEXTS[:4])
    finally:
        server.release.set()
        holder.join()
    np.testing.assert_allclose(result.vectors, reference_vectors[:4], atol=1e-6)
    assert server.counters.failures.get("Overloaded", 0) >= 1


def test_error_bodies_json_and_plain_text(tei_fixture):
    server = tei_fixture()
    http = HttpEndpoint("tei", server.url)
    with pytest.raises(HttpStatusError) as info:  # an embedding model asked to rerank
        http.request("POST", f"{server.url}/rerank", {"query": "q", "texts": ["a"]})
    assert (info.value.status, info.value.error_type, info.value.message) == (
        424,
        "Backend",
        "model is not a re-ranker model",
    )
    with pytest.raises(HttpStatusError) as info:  # wrong field type: the HTTP layer answers plain text
        http.request("POST", f"{server.url}/embed", {"inputs": "x", "normalize": "yes"})
    assert info.value.status == 422 and info.value.message.startswith("Failed to deserialize the JSON body")
    assert "tei: HTTP 422 from" in str(info.value)
    broken = httpx.post(f"{server.url}/embed", content=b"{", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and broken.headers["content-type"].startswith("text/plain")
    assert httpx.post(f"{server.url}/embed", content=b"{}").status_code == 415
    with pytest.raises(HttpStatusError) as info:  # a Cohere body sent to TEI's /rerank
        HttpEndpoint("r", server.url).request("POST", f"{server.url}/rerank", {"query": "q", "documents": ["a"]})
    assert info.value.status == 422 and "missing field `texts`" in info.value.message


def test_key_required(tei_fixture, monkeypatch):
    server = tei_fixture(api_key="tei-secret")
    with pytest.raises(HttpStatusError) as info:
        open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}")).embed(["a"])
    assert info.value.status == 401
    monkeypatch.setenv("RAGBENCH_TEST_TEI_KEY", "tei-secret")
    assert open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}?key_env=RAGBENCH_TEST_TEI_KEY")).embed(
        ["a"]
    ).vectors.shape == (1, 384)


def test_embed_options_normalize_dimensions_and_truncation(tei_fixture, minilm_backend):
    server = tei_fixture(auto_truncate=False, max_input_length=64)
    raw = open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}?normalize=false")).embed(TEXTS[:3]).vectors
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)
    cut = open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}?dimensions=100")).embed(TEXTS[:3]).vectors
    full = minilm_backend.embed(TEXTS[:3], normalize=True, max_tokens=64)
    expected = full[:, :100] / np.linalg.norm(full[:, :100], axis=1, keepdims=True)
    np.testing.assert_allclose(cut, expected, atol=1e-6)  # TEI re-normalises after cutting
    long_text = " ".join(["word"] * 100)
    with pytest.raises(HttpStatusError) as info:
        open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}")).embed([long_text])
    assert info.value.status == 422 and "must have less than 64 tokens" in info.value.message
    truncated = open_endpoint(parse_endpoint_spec(f"t=tei@{server.url}?truncate=true")).embed([long_text]).vectors
    assert truncated.shape == (1, 384)


def test_info_tokenize_metrics(tei_fixture):
    server = tei_fixture(version="1.8.4", max_client_batch_size=8)
    client = TeiClient("tei", server.url)
    info = client.info()
    assert (info.version, info.model_kind, info.max_client_batch_size, info.model_dtype) == (
        "1.8.4",
        "embedding",
        8,
        "float32",
    )
    tokens = client.tokenize(["hello world"])
    assert [t["text"] for t in tokens[0]] == ["[CLS]", "hello", "world", "[SEP]"]
    client.post("/embed", {"inputs": ["a"]})
    with pytest.raises(HttpStatusError):
        client.post("/embed", {"inputs": ["a"] * 9})
    counters = client.metrics().counters
    assert counters['te_request_success{method="batch"}'] >= 2  # tokenize + embed
    assert counters['te_request_failure{err="validation"}'] == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_rerank_scores_match_cross_encoder_and_split_batches(tei_fixture, minilm_backend, version):
    server = tei_fixture(version=version, model_kind="reranker", max_client_batch_size=4)
    reranker = open_endpoint(parse_endpoint_spec(f"r=tei-rerank@{server.url}"))
    texts = TEXTS[:10]
    result = reranker.rerank("what is topic 3", texts)
    expected = minilm_backend.scores("what is topic 3", texts, raw=False)
    np.testing.assert_allclose(result.scores, expected, atol=1e-6)
    assert result.order == [int(i) for i in np.argsort(-expected, kind="stable")]
    assert [c.inputs for c in result.calls] == [4, 4, 2]
    top = reranker.rerank("what is topic 3", texts, top_n=3)  # TEI has no top_n: trimmed by the client
    assert top.order == result.order[:3] and int(np.isnan(top.scores).sum()) == 7
    raw = open_endpoint(parse_endpoint_spec(f"r=tei-rerank@{server.url}?raw_scores=true")).rerank(
        "what is topic 3", texts
    )
    np.testing.assert_allclose(1 / (1 + np.exp(-raw.scores)), expected, atol=1e-6)


def test_html_and_wrong_shape_answers_name_the_endpoint(tei_fixture):
    html = tei_fixture(faults=("html",))
    with pytest.raises(ServerError) as info:
        open_endpoint(parse_endpoint_spec(f"webui=tei@{html.url}")).embed(["a"])
    assert str(info.value).startswith("webui: ") and "text/html" in str(info.value) and "not JSON" in str(info.value)
    shape = tei_fixture(faults=("wrong_shape",))
    with pytest.raises(ServerError) as info:
        open_endpoint(parse_endpoint_spec(f"odd=tei@{shape.url}")).embed(["a"])
    assert str(info.value).startswith("odd: ") and "unexpected shape" in str(info.value)


def test_unreachable_endpoint_is_a_server_error():
    from tests.harness.process import free_port

    with pytest.raises(ServerError) as info:
        open_endpoint(parse_endpoint_spec(f"gone=tei@http://127.0.0.1:{free_port()}")).embed(["a"])
    assert str(info.value).startswith("gone: cannot reach")
