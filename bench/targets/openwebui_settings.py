"""Open WebUI's retrieval settings that each search variant (vector, hybrid, rerank) sets."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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


def variant_settings(
    variant: Variant, bm25_weight: float, reranker: ExternalReranker, current: dict[str, object]
) -> dict[str, object]:
    """The retrieval settings `variant` needs, given the server's `current` ones."""
    wanted: dict[str, object] = {"ENABLE_RAG_HYBRID_SEARCH": variant != Variant.VECTOR, "RELEVANCE_THRESHOLD": 0.0}
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
