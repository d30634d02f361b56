"""The reranker probe Open WebUI and LightRAG share: the Cohere body both send, and what goes wrong with it."""

from __future__ import annotations

from urllib.parse import urlsplit

from bench.core.http import HttpClient
from bench.doctor.probe import PING, describe, probe
from bench.results.schema import DoctorFinding


def check_reranker_url(
    client: HttpClient, hop: str, url: str, model: str, key: str | None, fallback: str
) -> DoctorFinding:
    """POST the Cohere body that Open WebUI and LightRAG send; name what goes wrong."""
    body = {"model": model, "query": PING[0], "documents": ["a", "b"], "top_n": 2}
    p = probe(client, "POST", url, body, key)
    path = urlsplit(url).path
    if p.ok and isinstance(p.body, dict) and isinstance(p.body.get("results"), list):
        return DoctorFinding(hop, True, f"reranker {url} answers a Cohere-shaped request")
    if p.status is None:
        return DoctorFinding(
            hop,
            False,
            f"reranker {url} unreachable ({p.message}); {fallback}",
            "fix the reranker URL or start the reranker",
        )
    if p.status == 404 and not path.rstrip("/").endswith("rerank"):
        return DoctorFinding(
            hop,
            False,
            f"reranker URL {url} has no rerank path (HTTP 404); it is used verbatim; {fallback}",
            f"use the full route, e.g. {url.rstrip('/')}/v1/rerank",
        )
    if p.status == 422 and "texts" in p.message:
        return DoctorFinding(
            hop,
            False,
            f"wrong wire shape: {url} is TEI's /rerank, which wants {{query, texts}}, but a Cohere body "
            f"(documents) is sent -> HTTP 422; {fallback}",
            "put a Cohere-shaped route in between (LiteLLM /v1/rerank with a huggingface/ model) "
            "or a Cohere-compatible server",
        )
    if p.ok:
        return DoctorFinding(
            hop,
            False,
            f"reranker {url} answered without `results` ({p.message or 'wrong shape'}); {fallback}",
            "point it at a Cohere-shaped rerank route",
        )
    return DoctorFinding(
        hop,
        False,
        f"reranker configured but failing at {url} ({describe(p)}); {fallback}",
        "fix the reranker (model name, key, URL) until this probe passes",
    )
