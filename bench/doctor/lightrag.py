"""The LightRAG hop: is it up, and its reranker."""

from __future__ import annotations

from bench.core.http import HttpClient
from bench.doctor.probe import PING, describe, probe
from bench.doctor.reranker import check_reranker_url
from bench.results.schema import DoctorFinding


def check_lightrag(client: HttpClient, url: str) -> list[DoctorFinding]:
    base = url.rstrip("/")
    health = probe(client, "GET", f"{base}/health")
    cfg = health.body.get("configuration") if health.ok and isinstance(health.body, dict) else None
    if not isinstance(cfg, dict):
        return [
            DoctorFinding(
                "lightrag",
                False,
                f"{base}/health: {describe(health) if not health.ok else 'no configuration'}",
                "give --lightrag the server's base URL",
            )
        ]
    found = [
        DoctorFinding(
            "lightrag",
            True,
            f"LightRAG answers; embedding {cfg.get('embedding_binding')} {cfg.get('embedding_model')!r}, "
            f"rerank {'on' if cfg.get('enable_rerank') else 'off'}",
        )
    ]
    host = str(cfg.get("embedding_binding_host") or "").rstrip("/")
    if cfg.get("embedding_binding") == "openai" and host:
        body = {"model": cfg.get("embedding_model"), "input": PING, "encoding_format": "base64"}  # what LightRAG sends
        p = probe(client, "POST", f"{host}/embeddings", body)
        if p.status is None or (p.status >= 400 and p.status not in (401, 403)):
            hint = "encoding_format=base64 rejected" if p.status in (400, 422) else "embedding endpoint fails"
            found.append(
                DoctorFinding(
                    "lightrag",
                    False,
                    f"{hint}: {host}/embeddings ({describe(p)})",
                    "serve embeddings through a route that accepts base64 (infinity, LiteLLM, vLLM)",
                )
            )
    if cfg.get("enable_rerank") and cfg.get("rerank_binding_host"):
        found.append(
            check_reranker_url(
                client,
                "lightrag",
                str(cfg["rerank_binding_host"]),
                str(cfg.get("rerank_model") or ""),
                None,
                "LightRAG logs the error and returns unreranked chunks",
            )
        )
    return found
