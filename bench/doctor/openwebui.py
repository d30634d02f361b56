"""The Open WebUI hop: its embedding settings (batch size, fan-out against TEI's limits) and its reranker."""

from __future__ import annotations

from dataclasses import dataclass

from bench.core.http import HttpClient
from bench.doctor.probe import PING, Facts, Probe, count_setting, describe, probe
from bench.doctor.reranker import check_reranker_url
from bench.results.schema import DoctorFinding
from bench.targets.openwebui_store import NOT_REPORTED, StoreIdentity, split_store


@dataclass(frozen=True)
class EmbeddingSettings:
    """What the doctor checks of /api/v1/retrieval/embedding's answer, as Open WebUI sent it."""

    engine: object  # RAG_EMBEDDING_ENGINE
    model: object  # RAG_EMBEDDING_MODEL, sent on to the embedder as it is
    flooding: bool  # ENABLE_ASYNC_EMBEDDING (default on) without RAG_EMBEDDING_CONCURRENT_REQUESTS: no limit
    batch: int  # RAG_EMBEDDING_BATCH_SIZE (1 where none or not a count)
    openai_url: str  # openai_config.url, without a trailing /
    openai_key: str | None


@dataclass(frozen=True)
class RerankerSettings:
    """What the doctor checks of /api/v1/retrieval/config's answer: the reranker Open WebUI calls."""

    external: bool  # RAG_RERANKING_ENGINE is "external"
    model: str
    url: str
    key: str | None


def _embedding_settings(answer: Probe) -> EmbeddingSettings:
    """The settings in /api/v1/retrieval/embedding's JSON (a dict: checked by the caller)."""
    body = answer.body
    given = body.get("openai_config")
    openai = given if isinstance(given, dict) else {}
    return EmbeddingSettings(
        engine=body.get("RAG_EMBEDDING_ENGINE"),
        model=body.get("RAG_EMBEDDING_MODEL"),
        flooding=bool(body.get("ENABLE_ASYNC_EMBEDDING", True) and not body.get("RAG_EMBEDDING_CONCURRENT_REQUESTS")),
        batch=count_setting(body.get("RAG_EMBEDDING_BATCH_SIZE"), 1),
        openai_url=str(openai.get("url") or "").rstrip("/"),
        openai_key=openai.get("key") or None,
    )


def _reranker_settings(answer: Probe) -> RerankerSettings:
    """The reranker in /api/v1/retrieval/config's JSON (a dict: checked by the caller)."""
    body = answer.body
    return RerankerSettings(
        external=body.get("RAG_RERANKING_ENGINE") == "external",
        model=body.get("RAG_RERANKING_MODEL") or "",
        url=body.get("RAG_EXTERNAL_RERANKER_URL") or "",
        key=body.get("RAG_EXTERNAL_RERANKER_API_KEY") or None,
    )


def check_openwebui(client: HttpClient, url: str, key: str | None, key_env: str, facts: Facts) -> list[DoctorFinding]:
    """`url` may state the app's vector store as a target does (`URL?store=pgvector-halfvec-hnsw`)."""
    given, stated = split_store(url)
    base = given.rstrip("/")
    if not key:
        return [
            DoctorFinding(
                "openwebui",
                False,
                f"no API key in ${key_env}",
                f"create one (Settings > Account > API keys) and export {key_env}",
            )
        ]
    config = probe(client, "GET", f"{base}/api/v1/retrieval/config", key=key)
    embedding = probe(client, "GET", f"{base}/api/v1/retrieval/embedding", key=key)
    for p, route in ((config, "retrieval/config"), (embedding, "retrieval/embedding")):
        if not p.ok or not isinstance(p.body, dict):
            fix = (
                f"check ${key_env} (an admin's API key)" if p.status in (401, 403) else "give --openwebui the base URL"
            )
            return [
                DoctorFinding(
                    "openwebui", False, f"{base}/api/v1/{route}: {describe(p) if not p.ok else p.message}", fix
                )
            ]
    settings = _embedding_settings(embedding)
    found = [
        DoctorFinding(
            "openwebui",
            True,
            f"Open WebUI answers; embedding engine {settings.engine!r}, model {settings.model!r}",
        )
    ]
    found.append(_store_finding(config, stated))
    found += _openwebui_embedding(client, settings, facts)
    found += _openwebui_reranker(client, _reranker_settings(config))
    return found


def _store_finding(config: Probe, stated: str | None) -> DoctorFinding:
    """The vector store and its index, as far as the app reports them or the user states them (said, not judged)."""
    try:
        store = StoreIdentity(stated).reported(config.body, ValueError)
    except ValueError as exc:
        return DoctorFinding("openwebui", False, f"vector store: {exc}", "state the store the app runs on")
    if store.name is None:
        return DoctorFinding("openwebui", True, f"vector store: unknown: {NOT_REPORTED}")
    source = "reported by the app" if store.app_reported else "stated, not reported by the app"
    index = f"index: {store.index}" if store.index else "index settings not stated (e.g. store=pgvector-halfvec-hnsw)"
    return DoctorFinding("openwebui", True, f"vector store: {store.name} ({source}); {index}")


def _openwebui_embedding(client: HttpClient, settings: EmbeddingSettings, facts: Facts) -> list[DoctorFinding]:
    found = []
    if settings.flooding:
        found.append(
            DoctorFinding(
                "openwebui",
                False,
                "unlimited concurrent embedding requests (RAG_EMBEDDING_CONCURRENT_REQUESTS=0): "
                "one large upload floods the embedder (TEI >= 1.9 answers 429 per input)",
                "set RAG_EMBEDDING_CONCURRENT_REQUESTS (e.g. 4) via /api/v1/retrieval/embedding/update",
            )
        )
    if settings.engine != "openai":
        return found
    emb_url, emb_key, batch, model = settings.openai_url, settings.openai_key, settings.batch, settings.model
    ping = probe(client, "POST", f"{emb_url}/embeddings", {"model": model, "input": PING}, emb_key)
    if not ping.ok:
        found.append(
            DoctorFinding(
                "openwebui",
                False,
                f"embedding endpoint {emb_url}/embeddings fails ({describe(ping)})",
                "fix RAG_OPENAI_API_BASE_URL / key / model: uploads will fail to embed (the upload still answers 200)",
            )
        )
        return found
    found += _openwebui_batch(client, emb_url, emb_key, model, batch, facts)
    if not [f for f in found if not f.ok]:
        found.append(DoctorFinding("openwebui", True, f"embedding endpoint answers (batch size {batch})"))
    return found


def _openwebui_batch(
    client: HttpClient, emb_url: str, emb_key: str | None, model: object, batch: int, facts: Facts
) -> list[DoctorFinding]:
    """RAG_EMBEDDING_BATCH_SIZE against TEI's limit when the doctor saw TEI, else one request of that size."""
    if facts.tei_batch_limit is not None and batch > facts.tei_batch_limit:
        return [
            DoctorFinding(
                "openwebui",
                False,
                f"RAG_EMBEDDING_BATCH_SIZE={batch} is above TEI's max_client_batch_size {facts.tei_batch_limit}",
                f"set RAG_EMBEDDING_BATCH_SIZE <= {facts.tei_batch_limit}",
            )
        ]
    if batch > 1:
        full = probe(client, "POST", f"{emb_url}/embeddings", {"model": model, "input": PING * batch}, emb_key)
        if not full.ok:
            return [
                DoctorFinding(
                    "openwebui",
                    False,
                    f"a batch of RAG_EMBEDDING_BATCH_SIZE={batch} inputs is refused ({describe(full)})",
                    "lower RAG_EMBEDDING_BATCH_SIZE to the server's limit",
                )
            ]
    return []


def _openwebui_reranker(client: HttpClient, reranker: RerankerSettings) -> list[DoctorFinding]:
    if not reranker.external:
        return []
    fallback = "Open WebUI silently falls back to unreranked results"
    model, url = reranker.model, reranker.url
    if not model or not url:
        return [
            DoctorFinding(
                "openwebui",
                False,
                "external reranker configured without "
                f"{'RAG_RERANKING_MODEL' if not model else 'RAG_EXTERNAL_RERANKER_URL'}",
                "set both",
            )
        ]
    return [check_reranker_url(client, "openwebui", url, model, reranker.key, fallback)]
