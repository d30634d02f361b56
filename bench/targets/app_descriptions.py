"""What the app targets (LightRAG, Open WebUI) store with their results (`describe()`, the record's `config`) and the
query bodies they send, as typed shapes (issue 49). Fields that hold a server's own JSON as it came (masked) are
`object`: stored, never read."""

from __future__ import annotations

from enum import StrEnum
from typing import TypedDict

from bench.targets.base import TargetKind
from bench.targets.hops import MeterDescription
from bench.targets.http_shared import CorpusDescription
from bench.targets.lightrag_documents import LightRAGIngestFigures
from bench.targets.openwebui_knowledge import OpenWebUIIngestFigures
from bench.targets.openwebui_settings import Variant
from bench.targets.openwebui_store import StoreDescription


class Mode(StrEnum):
    """LightRAG's query mode (`lightrag:MODE`)."""

    NAIVE = "naive"
    LOCAL = "local"
    GLOBAL = "global"
    HYBRID = "hybrid"
    MIX = "mix"


class LightRAGVersion(TypedDict):
    core_version: object  # as /health sends them (None: not sent)
    api_version: object


class LightRAGQuery(TypedDict):
    endpoint: str
    top_k: int
    chunk_top_k: int | str  # the number asked, or how it follows the depth
    max_chunks: int | str
    enable_rerank: bool


class LightRAGCache(TypedDict):
    enabled: bool | None  # ENABLE_LLM_CACHE as /health reports it (None: not reported)
    note: str


class LightRAGCleanup(TypedDict):
    requested: bool
    deleted: int


class LightRAGDescription(TypedDict):
    """A LightRAG target's `describe()`."""

    kind: TargetKind
    mode: Mode
    url: str
    server_version: LightRAGVersion
    health: object  # /health's JSON as it came, masked
    query: LightRAGQuery
    mapping: str
    metered: MeterDescription | None
    llm_cache: LightRAGCache
    ingest: LightRAGIngestFigures
    corpus: CorpusDescription | None
    cleanup: LightRAGCleanup


class KnowledgeBase(TypedDict):
    name: str | None
    id: str | None


class Chunking(TypedDict):
    splitter: object  # the retrieval config's values as the server has them
    chunk_size: object
    chunk_overlap: object
    mapping: str


class OpenWebUIDescription(TypedDict):
    """An Open WebUI target's `describe()`; the settings and configs are the server's, masked."""

    kind: TargetKind
    variant: Variant
    url: str
    server_version: str | None
    store: StoreDescription
    endpoint: str
    knowledge_base: KnowledgeBase
    chunking: Chunking
    settings_before: object
    settings_applied: object
    retrieval_config: object
    embedding_config: object
    ingest: OpenWebUIIngestFigures
    corpus: CorpusDescription | None
    metered: MeterDescription | None


class _LightRAGQueryRequired(TypedDict):
    query: str
    mode: Mode
    top_k: int
    enable_rerank: bool
    include_references: bool


class LightRAGQueryBody(_LightRAGQueryRequired, total=False):
    """LightRAG's /query body (`quality --generate native`); `response_type`, `user_prompt` as given."""

    response_type: str
    user_prompt: str
    chunk_top_k: int


class _OpenWebUIQueryRequired(TypedDict):
    query: str
    k: int


class OpenWebUIQueryBody(_OpenWebUIQueryRequired, total=False):
    """Open WebUI's /api/v1/retrieval/query/{doc,collection} body: hybrid fields for the hybrid and rerank variants,
    the knowledge base's collection by the route's field name."""

    k_reranker: int
    hybrid_bm25_weight: float
    collection_name: str | None
    collection_names: list[str | None]
