"""The results file's ingest records: one `ingest_point` per target and settings combination, one `ingest_summary`
per target with the recommended setting."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from bench.results.schema.kinds import ErrorCount, TargetKind

# A server setting's value as a run reads it back: a scalar of the server's own settings form (Open WebUI's
# embedding and retrieval settings), never a nested object.
SettingValue = bool | int | float | str | None
Settings = dict[str, SettingValue]  # setting name -> value


class IngestStatus(StrEnum):
    """How a combination's ingest ended."""

    OK = "ok"  # every document processed and listed
    LOST = "lost"  # some documents failed or were silently dropped (`failed`, `lost`)
    FAILED = "failed"  # the combination could not be measured (`error`)


@dataclass
class EndpointCalls:
    """One metered route's view of a combination (the meter between the app and that endpoint)."""

    calls: int
    by_status: dict[str, int]  # ok, 429, 413, 422, 5xx, other, no-answer
    texts: int  # texts the calls carried (`input`, `inputs`, `documents`, `texts`)
    texts_per_call_mean: float | None
    texts_per_call_max: int | None
    retries: int  # calls whose body repeated one of an earlier call of the route that had failed
    seconds: float  # the calls' time, summed
    busy_fraction: float | None  # share of the combination's wall time with at least one call in flight
    peak_in_flight: int  # most calls in flight at once
    upstream_seconds: float | None  # the endpoint's own time (TEI's x-total-time, ...) where it sent it
    calls_with_upstream_time: int
    prompt_tokens: int  # from the replies' `usage` (LLM calls)
    completion_tokens: int

    @property
    def failed(self) -> list[ErrorCount]:
        """The calls not answered ok, one typed record per status class (no message: the meter keeps none)."""
        return ErrorCount.of({k: n for k, n in self.by_status.items() if k != "ok"}, {})


@dataclass
class DirectIngest:
    """The app's own embedding calls sent again straight to the embedding endpoint by ragbench: the same bodies,
    as many in flight as the app had at its peak (what the embedder alone takes)."""

    route: str
    calls: int
    failed_calls: int
    concurrency: int
    seconds: float
    docs_per_s: float | None  # the combination's documents over this wall time


@dataclass
class IngestPointRecord:
    """`ragbench ingest`: one target ingesting the corpus under one settings combination."""

    target: str  # the target as given (secrets masked)
    kind: TargetKind  # openwebui | lightrag
    label: str  # the combination, e.g. "RAG_EMBEDDING_BATCH_SIZE=8 RAG_EMBEDDING_CONCURRENT_REQUESTS=4"
    settings: Settings  # the combination's settings as the server read them back
    status: IngestStatus
    documents: int  # documents sent
    processed: int  # documents the server lists as processed afterwards
    failed: int  # documents whose processing the server reported failed
    lost: int  # documents accepted but not listed as processed afterwards (silently dropped)
    seconds: float  # first upload to last document processed
    docs_per_s: float | None  # processed documents over `seconds`
    chunks: int | None  # distinct texts embedded (the app's chunks), where metered
    chunks_per_s: float | None
    doc_latency_ms: dict[str, float]  # per document, upload to processed: p50, p99 (where enough documents), n
    upload_concurrency: int  # documents in flight at once
    calls: dict[str, EndpointCalls]  # by meter route (embedding, llm, ...)
    direct: DirectIngest | None  # None: no meter, so no calls to send again
    app_over_direct: float | None  # docs_per_s ÷ direct docs_per_s: what the app leaves of the embedder's speed
    failed_examples: dict[str, str] = field(default_factory=dict)  # document id -> why (first 10)
    container: str | None = None  # the knowledge base (Open WebUI) or document prefix (LightRAG) ingested into
    error: str | None = None  # why the combination could not be measured
    record: str = "ingest_point"


@dataclass
class IngestSummaryRecord:
    """`ragbench ingest`: the recommended combination of one target, with the figures it rests on."""

    target: str
    recommended: str | None  # the combination's label; None: no combination qualified
    reason: str  # why it is recommended, with its figures, or why none is
    record: str = "ingest_summary"
