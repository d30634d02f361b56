"""The LiteLLM hop: its models, their modes, base64 and float encodings alike, and its rerank route."""

from __future__ import annotations

import base64
from enum import StrEnum
from typing import Any

import numpy as np

from bench.core.http import HttpClient
from bench.doctor.probe import PING, Probe, describe, probe
from bench.results.schema import DoctorFinding


class LiteLLMMode(StrEnum):
    """The `model_info.mode`s the doctor probes (LiteLLM has others: chat, completion, ...)."""

    EMBEDDING = "embedding"
    RERANK = "rerank"


def check_litellm(client: HttpClient, url: str, key: str | None, key_env: str) -> list[DoctorFinding]:
    base = url.rstrip("/")
    base = base[:-3] if base.endswith("/v1") else base
    models = probe(client, "GET", f"{base}/v1/models", key=key)
    if models.status in (401, 403) or (models.status == 500 and not key):
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{base}/v1/models refused the key ({describe(models)})",
                f"export the proxy key in ${key_env}",
            )
        ]
    data = models.body.get("data") if models.ok and isinstance(models.body, dict) else None
    if not isinstance(data, list):
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{base}/v1/models: {describe(models) if not models.ok else models.message or 'no data list'}",
                "give --litellm the proxy's base URL (http://host:4000)",
            )
        ]
    found = [DoctorFinding("litellm", True, f"proxy answers; models: {', '.join(str(m.get('id')) for m in data)}")]
    modes = _litellm_modes(client, base, key)
    for model in (str(m.get("id")) for m in data):
        found += _check_litellm_model(client, base, model, key, modes.get(model))
    return found


def _litellm_modes(client: HttpClient, base: str, key: str | None) -> dict[str, str | None]:
    """Each model's `model_info.mode` (embedding, rerank, chat...) where the config or cost map sets one.

    Probing a model with the wrong kind of request is a failure that LiteLLM counts toward putting the
    deployment in cooldown, so the doctor sends each model only the request its mode calls for.
    """
    info = probe(client, "GET", f"{base}/model/info", key=key)
    rows = info.body.get("data") if info.ok and isinstance(info.body, dict) else None
    modes: dict[str, str | None] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("model_info"), dict):
            modes[str(row.get("model_name"))] = row["model_info"].get("mode")
    return modes


def _check_litellm_model(
    client: HttpClient, base: str, model: str, key: str | None, mode: str | None
) -> list[DoctorFinding]:
    if mode is not None and mode not in set(LiteLLMMode):
        return [DoctorFinding("litellm", True, f"{model}: mode {mode}, not an embedding or rerank model (not probed)")]
    as_float = Probe(None, message="not probed: mode rerank")
    if mode != LiteLLMMode.RERANK:
        as_float = probe(
            client, "POST", f"{base}/v1/embeddings", {"model": model, "input": PING, "encoding_format": "float"}, key
        )
    if as_float.ok:
        return _check_litellm_encodings(client, base, model, key, as_float)
    if mode == LiteLLMMode.EMBEDDING:
        return [
            DoctorFinding(
                "litellm",
                False,
                f"{model}: embeddings fail ({describe(as_float)})",
                "check the model's provider prefix, api_base and key in the LiteLLM config",
            )
        ]
    return _check_litellm_rerank(client, base, model, key, mode, as_float)


def _check_litellm_encodings(
    client: HttpClient, base: str, model: str, key: str | None, as_float: Probe
) -> list[DoctorFinding]:
    """Embeddings answered as floats: base64 (what LightRAG and the OpenAI SDK ask for) must give the same vector."""
    found = [DoctorFinding("litellm", True, f"{model}: embeddings answer")]
    as_b64 = probe(
        client, "POST", f"{base}/v1/embeddings", {"model": model, "input": PING, "encoding_format": "base64"}, key
    )
    if not as_b64.ok:
        found.append(
            DoctorFinding(
                "litellm",
                False,
                f"{model}: encoding_format=base64 rejected ({describe(as_b64)}); LightRAG and the OpenAI SDK send it",
                "serve through a backend that accepts base64, or pin encoding_format: float in litellm_params",
            )
        )
    elif not _same_vector(as_float.body, as_b64.body):
        found.append(
            DoctorFinding(
                "litellm",
                False,
                f"{model}: base64 and float answers decode to different vectors",
                "pin encoding_format in litellm_params so every client gets the same encoding",
            )
        )
    return found


def _check_litellm_rerank(
    client: HttpClient, base: str, model: str, key: str | None, mode: str | None, as_float: Probe
) -> list[DoctorFinding]:
    """A model that is not an embedding model: its rerank route, and whether it honours top_n."""
    body = {"model": model, "query": PING[0], "documents": ["a", "b", "c"], "top_n": 1}
    rerank = probe(client, "POST", f"{base}/v1/rerank", body, key)
    if rerank.ok:
        results = rerank.body.get("results") if isinstance(rerank.body, dict) else None
        if not isinstance(results, list):
            return [
                DoctorFinding(
                    "litellm", False, f"{model}: rerank answered without `results`", "check the provider prefix"
                )
            ]
        if len(results) > 1:
            return [
                DoctorFinding(
                    "litellm",
                    False,
                    f"{model}: rerank ignored top_n=1 ({len(results)} results)",
                    "trim on the client, or use a provider that honours top_n (LiteLLM's huggingface/ does not)",
                )
            ]
        return [DoctorFinding("litellm", True, f"{model}: rerank answers and honours top_n")]
    tried = (
        f"rerank fails ({describe(rerank)})"
        if mode == LiteLLMMode.RERANK
        else f"neither embeddings ({describe(as_float)}) nor rerank ({describe(rerank)}) answer"
    )
    return [
        DoctorFinding(
            "litellm",
            False,
            f"{model}: {tried}; a reranker configured here fails silently behind Open WebUI",
            "check the model's provider prefix and api_base in the LiteLLM config "
            "(cohere/ posts to {api_base}/v2/rerank)",
        )
    ]


def _same_vector(float_body: Any, b64_body: Any) -> bool:
    try:
        a = np.asarray(float_body["data"][0]["embedding"], dtype=np.float32)
        b = np.frombuffer(base64.b64decode(b64_body["data"][0]["embedding"]), dtype="<f4")
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, atol=1e-6))
