"""The shared server fixtures start real engines that answer in their documented shapes."""

from __future__ import annotations

import os

import httpx
import pytest

pytestmark = pytest.mark.integration


def test_infinity_serves_embed_and_rerank_models(infinity_server):
    models = httpx.get(f"{infinity_server.url}/models", timeout=10).json()
    capabilities = {m["id"]: m["capabilities"] for m in models["data"]}
    assert capabilities == {infinity_server.embed_model: ["embed"], infinity_server.rerank_model: ["rerank"]}


def test_litellm_forwards_embeddings_and_rerank(litellm_server):
    headers = {"Authorization": f"Bearer {os.environ[litellm_server.key_env]}"}
    with httpx.Client(base_url=litellm_server.url, headers=headers, timeout=30) as client:
        emb = client.post("/v1/embeddings", json={"model": litellm_server.embed_model, "input": ["a b"]}).json()
        assert len(emb["data"][0]["embedding"]) == 384
        body = {"model": litellm_server.rerank_model, "query": "q", "documents": ["x", "y", "z"], "top_n": 2}
        rerank = client.post("/v1/rerank", json=body).json()
        assert sorted(r["index"] for r in rerank["results"]) != [] and len(rerank["results"]) == 2
