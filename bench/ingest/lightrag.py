"""One LightRAG ingest measured: the corpus's new documents inserted into a running LightRAG and waited for, their
status listed afterwards, the calls LightRAG made through the ingest's meter: one `ingest_point`.

LightRAG has no settings ragbench can change per combination (they are its server's environment): the point's
label is `default`, its settings empty. Where each figure comes from:
- documents: the corpus documents not on the server before; those already there (an earlier run's) are counted,
  never measured, and a corpus wholly there is one error;
- seconds: LightRAG's own clock, from the first document enqueued (`created_at`) to the last one's final status
  (`updated_at`), as the server lists them afterwards; where it gives no timestamps, ragbench's wall time from the
  first insert sent to every document seen final (polled each second, so up to a second long);
- latency: per document (LightRAG tracks each one), `updated_at − created_at` of every processed document, the
  server's clock: enqueued to processed, its wait in LightRAG's queue (MAX_PARALLEL_INSERT at a time) included;
- processed, failed, lost: the server's list afterwards: processed, failed (with its error_msg), or lost (not
  listed as either);
- chunks: the processed documents' `chunks_count` (the embedding route also carries entity and relation texts, so
  its distinct texts are not the chunks);
- calls: per meter route (embedding, llm, ...) from a meter that keeps its calls; LLM tokens from the replies'
  `usage`. LightRAG's extraction cache (ENABLE_LLM_CACHE_FOR_EXTRACT) answers a text it extracted before without
  an LLM call: documents inserted before, deleted and inserted again cost fewer LLM calls;
- direct: the embedding route's successful calls sent again straight to the embedder, over the documents processed.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from bench.core.errors import UserError
from bench.core.progress import ProgressFactory, console
from bench.core.secrets import mask
from bench.endpoints.meter import Meter
from bench.ingest.direct import send_direct
from bench.ingest.record import EMBEDDING_ROUTE, Combination, DocsOutcome, point_record, target_name
from bench.results.schema import IngestPointRecord
from bench.targets.base import TargetKind
from bench.targets.http_shared import DedupedCorpus, file_name
from bench.targets.lightrag import LightRAGTarget, ServerConfiguration
from bench.targets.lightrag_documents import (
    DocStatus,
    ListedDocument,
    TrackWatch,
    corpus_on_server,
    documents_on_server,
    insert_batches,
    insert_texts,
)

LABEL = "default"
# The meter routes LightRAG's providers can be pointed at: route -> (its /health key, the server's variable).
PROVIDER_HOSTS = {
    "embedding": ("embedding_binding_host", "EMBEDDING_BINDING_HOST"),
    "llm": ("llm_binding_host", "LLM_BINDING_HOST"),
    "rerank": ("rerank_binding_host", "RERANK_BINDING_HOST"),
}


@dataclass(frozen=True)
class LightRAGOutcome:
    """What the server lists afterwards for the documents inserted, by corpus id."""

    documents: int
    processed: list[str]
    failed: dict[str, str]  # doc id -> LightRAG's error_msg
    lost: list[str]  # listed neither processed nor failed
    seconds: float
    per_doc_s: list[float]
    chunks: int | None  # the processed documents' chunks_count, summed; None where the server gave none


def check_meter_routes(configuration: ServerConfiguration, meter: Meter, upstreams: dict[str, str]) -> None:
    """Each metered route that LightRAG's /health names a host for must lead to this meter: otherwise the documents
    would be inserted (and so no longer new) without their calls measured."""
    port = urlsplit(meter.url).port
    for route in upstreams:
        key, variable = PROVIDER_HOSTS.get(route, ("", ""))
        host = configuration.hosts.get(key)
        if host is None:
            continue
        where = urlsplit(host)
        if where.port != port or where.path.strip("/").split("/")[0] != route:
            raise UserError(
                f"--meter-upstream {route}: LightRAG sends its {route} calls to {mask(host)}, not through the meter: "
                f"start it with {variable}={meter.url}/{route}"
            )


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def listed_outcome(listed: dict[str, ListedDocument], inserted: dict[str, str], wall_s: float) -> LightRAGOutcome:
    """`listed`: the server's documents by file_path; `inserted`: file_source -> corpus id of those inserted."""
    processed: list[str] = []
    failed: dict[str, str] = {}
    lost: list[str] = []
    spans: dict[str, tuple[float | None, float | None]] = {}  # doc id -> (enqueued, final), each document final
    chunks: list[int | None] = []
    for source, doc_id in inserted.items():
        record = listed.get(source)
        if record is None or record.state not in (DocStatus.PROCESSED, DocStatus.FAILED):
            lost.append(doc_id)
            continue
        if record.state == DocStatus.PROCESSED:
            processed.append(doc_id)
            chunks.append(record.chunks_count)
        else:
            failed[doc_id] = record.error_msg[:300]
        spans[doc_id] = (_timestamp(record.created_at), _timestamp(record.updated_at))
    timed = {doc_id: (start, end) for doc_id, (start, end) in spans.items() if start is not None and end is not None}
    server_clock = bool(timed) and len(timed) == len(spans)
    return LightRAGOutcome(
        documents=len(inserted),
        processed=processed,
        failed=failed,
        lost=lost,
        seconds=max(e for _, e in timed.values()) - min(s for s, _ in timed.values()) if server_clock else wall_s,
        per_doc_s=[timed[d][1] - timed[d][0] for d in processed] if server_clock else [],
        chunks=sum(c for c in chunks if c is not None) if chunks and None not in chunks else None,
    )


def insert_and_list(target: LightRAGTarget, corpus: DedupedCorpus, progress: ProgressFactory) -> LightRAGOutcome:
    """Insert the corpus's documents not yet on the server, wait until each is final, list them."""
    sources = {file_name(doc_id): doc_id for doc_id in corpus.documents}
    found = corpus_on_server(target.http, list(sources))
    before = len(found.processed) + len(found.failed)
    if not found.new:
        raise UserError(
            f"--target {target.spec.public_text}: all {len(sources)} documents are already on the server: "
            "use a fresh LightRAG workspace (WORKSPACE, or another WORKING_DIR) or other documents"
        )
    if before:
        console.print(f"{target.name}: {before} of {len(sources)} documents already on the server: not measured")
    todo = [(source, corpus.documents[sources[source]].full_text) for source in found.new]
    advance = progress(f"{target.name}: inserting and processing", len(todo))
    started = time.perf_counter()
    watch = TrackWatch(
        target.http, [insert_texts(target.http, b, target.timeout_s) for b in insert_batches(todo, target.batch)]
    )
    try:
        watch.wait(len(todo), target.timeout_s, advance)
    finally:
        target.inserted_ids = watch.seen  # what the target's cleanup=true deletes
    wall_s = time.perf_counter() - started
    inserted = {source: sources[source] for source in found.new}
    return listed_outcome(documents_on_server(target.http), inserted, wall_s)


def ingest_lightrag(
    target: LightRAGTarget,
    corpus: DedupedCorpus,
    meter: Meter | None,
    upstreams: dict[str, str],
    progress: ProgressFactory,
    *,
    direct: bool = True,
    timeout_s: float = 300.0,
) -> IngestPointRecord:
    """The corpus ingested into `target`; `meter` (None: not metered) forwards `upstreams` (route -> URL) and keeps
    its calls; `direct`: resend the embedding route's calls straight to its upstream (`timeout_s` per call)."""
    configuration = ServerConfiguration.of(target.http.json("GET", "/health"))
    if meter is not None:
        check_meter_routes(configuration, meter, upstreams)
    index = len(meter.calls) if meter else 0
    outcome = insert_and_list(target, corpus, progress)
    if meter:
        meter.wait_idle()
    calls = meter.calls_since(index) if meter else None
    embedded = [c for c in calls or [] if c.route == EMBEDDING_ROUTE]
    if meter and EMBEDDING_ROUTE in upstreams and not embedded and outcome.processed:
        raise UserError(
            f"LightRAG processed {len(outcome.processed)} documents, but no embedding call passed the meter at "
            f"{meter.url}/{EMBEDDING_ROUTE}: start LightRAG with EMBEDDING_BINDING_HOST={meter.url}/{EMBEDDING_ROUTE}"
        )
    resent = None
    if meter and direct and embedded:
        resent = send_direct(EMBEDDING_ROUTE, upstreams[EMBEDDING_ROUTE], embedded, len(outcome.processed), timeout_s)
    point = point_record(
        Combination(target_name(target.spec), TargetKind.LIGHTRAG, {}, LABEL),
        DocsOutcome(outcome.documents, outcome.failed, outcome.lost, outcome.seconds, outcome.per_doc_s),
        calls,
        resent,
        configuration.workspace,
        configuration.max_parallel_insert,
    )
    seconds = outcome.seconds
    chunks_per_s = outcome.chunks / seconds if outcome.chunks is not None and seconds > 0 else None
    return dataclasses.replace(point, chunks=outcome.chunks, chunks_per_s=chunks_per_s)
