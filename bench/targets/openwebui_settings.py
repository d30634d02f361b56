"""Open WebUI's retrieval settings that each search variant (vector, hybrid, rerank) sets."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from bench.results.schema.ingest import Settings, SettingValue

if TYPE_CHECKING:
    from bench.core.http import HttpClient

EMBEDDING = "/api/v1/retrieval/embedding"
RETRIEVAL = "/api/v1/retrieval/config"
# The embedding form's scalar fields; its provider sections (openai_config, ...) are sent back as the server has them.
EMBEDDING_FIELDS = (
    "RAG_EMBEDDING_ENGINE",
    "RAG_EMBEDDING_MODEL",
    "RAG_EMBEDDING_BATCH_SIZE",
    "ENABLE_ASYNC_EMBEDDING",
    "RAG_EMBEDDING_CONCURRENT_REQUESTS",
)
_EMBEDDING_SECTIONS = ("openai_config", "ollama_config", "azure_openai_config")


class Variant(StrEnum):
    """How Open WebUI searches a knowledge base (`openwebui:VARIANT`)."""

    VECTOR = "vector"
    HYBRID = "hybrid"
    RERANK = "rerank"


# The retrieval settings a variant may change; exactly these are saved and restored.
SETTINGS = (
    "ENABLE_RAG_HYBRID_SEARCH",
    "HYBRID_BM25_WEIGHT",
    "RELEVANCE_THRESHOLD",
    "RAG_RERANKING_ENGINE",
    "RAG_RERANKING_MODEL",
    "RAG_EXTERNAL_RERANKER_URL",
    "RAG_EXTERNAL_RERANKER_API_KEY",
    "RAG_EXTERNAL_RERANKER_TIMEOUT",
)


@dataclass(frozen=True)
class ExternalReranker:
    """The reranker the rerank variant points Open WebUI at; `key` from the environment, "" when unset."""

    url: str | None
    model: str | None
    timeout: str
    key: str


def variant_settings(variant: Variant, bm25_weight: float, reranker: ExternalReranker, current: Settings) -> Settings:
    """The retrieval settings `variant` needs, given the server's `current` ones (SETTINGS)."""
    wanted: Settings = {"ENABLE_RAG_HYBRID_SEARCH": variant != Variant.VECTOR, "RELEVANCE_THRESHOLD": 0.0}
    if variant in (Variant.HYBRID, Variant.RERANK):
        wanted["HYBRID_BM25_WEIGHT"] = bm25_weight
    if variant == Variant.HYBRID:
        # No reranking model: Open WebUI scores the fused candidates by embedding similarity.
        wanted.update({"RAG_RERANKING_ENGINE": "", "RAG_RERANKING_MODEL": ""})
    if variant == Variant.RERANK:
        wanted.update(
            {
                "RAG_RERANKING_ENGINE": "external",
                "RAG_RERANKING_MODEL": reranker.model,
                "RAG_EXTERNAL_RERANKER_URL": reranker.url,
                "RAG_EXTERNAL_RERANKER_TIMEOUT": reranker.timeout,
            }
        )
        # The key from the environment; without one, the server's own key stays only for its own reranker URL.
        if reranker.key or current.get("RAG_EXTERNAL_RERANKER_URL") != reranker.url:
            wanted["RAG_EXTERNAL_RERANKER_API_KEY"] = reranker.key
    return wanted


def send_settings(http: HttpClient, values: Mapping[str, SettingValue]) -> None:
    """Set `values` through Open WebUI's two settings APIs: the embedding fields through the embedding form (sent
    whole: it resets any field it lacks to its default), the others through the retrieval settings."""
    on_embedding = {k: v for k, v in values.items() if k in EMBEDDING_FIELDS}
    on_retrieval = {k: v for k, v in values.items() if k not in EMBEDDING_FIELDS}
    if on_embedding:
        whole = http.json("GET", EMBEDDING).get(kind=dict)
        form = {k: whole[k] for k in (*EMBEDDING_FIELDS, *_EMBEDDING_SECTIONS) if k in whole}
        http.call("POST", f"{EMBEDDING}/update", json={**form, **on_embedding})
    if on_retrieval:
        http.call("POST", f"{RETRIEVAL}/update", json=on_retrieval)
