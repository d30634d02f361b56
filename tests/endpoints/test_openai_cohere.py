"""OpenAI-compatible embeddings and Cohere-shaped rerank against real infinity-emb and a real LiteLLM proxy."""

from __future__ import annotations

import numpy as np
import pytest

from bench.core.errors import ServerError
from bench.endpoints import open_endpoint, parse_endpoint_spec
from bench.endpoints.openai import decode_embedding

TEXTS = [
    "The cat sat on the mat.",
    "Stock markets fell sharply on Tuesday.",
    "  padded with spaces  ",
    "line one\nline two",
    "Photosynthesis converts light into chemical energy.",
]


def _litellm(server, model: str, kind: str = "openai", extra: str = "") -> str:
    return f"{kind}@{server.url}/v1?model={model}&key_env={server.key_env}{extra}"


@pytest.mark.integration
def test_openai_float_and_base64_agree_across_infinity_and_litellm(infinity_server, litellm_server, minilm_backend):
    expected = minilm_backend.embed(TEXTS, normalize=True, max_tokens=256)
    specs = [
        f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}",
        f"inf64=openai@{infinity_server.url}?model={infinity_server.embed_model}&encoding=base64",
        "lite=" + _litellm(litellm_server, litellm_server.embed_model),
        "lite64=" + _litellm(litellm_server, litellm_server.embed_model, extra="&encoding=base64"),
    ]
    for spec in specs:
        endpoint = open_endpoint(parse_endpoint_spec(spec))
        result = endpoint.embed(TEXTS)
        np.testing.assert_allclose(result.vectors, expected, atol=1e-5, err_msg=spec)
        assert result.calls[0].inputs == len(TEXTS) and result.calls[0].wall_ms > 0
        endpoint.close()


@pytest.mark.integration
def test_cohere_rerank_through_infinity_and_litellm_routes(infinity_server, litellm_server, minilm_backend):
    query = "where did the cat sit"
    expected = minilm_backend.scores(query, TEXTS, raw=False)
    order = [int(i) for i in np.argsort(-expected, kind="stable")]
    specs = [
        f"inf=cohere@{infinity_server.url}?model={infinity_server.rerank_model}",
        "lite1=" + _litellm(litellm_server, litellm_server.rerank_model, kind="cohere"),
        f"lite2=cohere@{litellm_server.url}/v2/rerank?model={litellm_server.rerank_model}&key_env={litellm_server.key_env}",
    ]
    for spec in specs:
        reranker = open_endpoint(parse_endpoint_spec(spec))
        full = reranker.rerank(query, TEXTS)
        np.testing.assert_allclose(full.scores, expected, atol=1e-5, err_msg=spec)
        assert full.order == order
        top = reranker.rerank(query, TEXTS, top_n=2)
        assert top.order == order[:2], spec


@pytest.mark.integration
def test_infinity_quirks_visible_to_the_client(infinity_server):
    """infinity cuts `dimensions` without re-normalising: identity must be able to see that."""
    cut = open_endpoint(
        parse_endpoint_spec(f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}&dimensions=128")
    )
    vectors = cut.embed(TEXTS).vectors
    assert vectors.shape == (len(TEXTS), 128)
    assert np.linalg.norm(vectors, axis=1).max() < 0.99


@pytest.mark.integration
def test_wrong_model_name_is_one_line_naming_the_endpoint(litellm_server):
    endpoint = open_endpoint(parse_endpoint_spec("lite=" + _litellm(litellm_server, "no-such-model")))
    with pytest.raises(ServerError) as info:
        endpoint.embed(["a"])
    assert str(info.value).startswith("lite: HTTP 400") and "\n" not in str(info.value)


def test_openai_route_of_the_fixture_base64_and_errors(tei_fixture, minilm_backend):
    server = tei_fixture()
    expected = minilm_backend.embed(TEXTS, normalize=True, max_tokens=512)
    b64 = open_endpoint(parse_endpoint_spec(f"t=openai@{server.url}/v1?model=m&encoding=base64&batch=2")).embed(TEXTS)
    np.testing.assert_allclose(b64.vectors, expected, atol=1e-6)
    assert [c.inputs for c in b64.calls] == [2, 2, 1]
    shaped = tei_fixture(faults=("wrong_shape",))
    with pytest.raises(ServerError, match=r"^odd: .*unexpected shape"):
        open_endpoint(parse_endpoint_spec(f"odd=openai@{shaped.url}/v1?model=m")).embed(TEXTS)


def test_decode_embedding_rejects_garbage():
    assert decode_embedding("not base64!") is None
    assert decode_embedding({"x": 1}) is None
    np.testing.assert_array_equal(decode_embedding([1, 2]), np.asarray([1, 2], dtype=np.float32))
