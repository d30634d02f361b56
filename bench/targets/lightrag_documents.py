"""LightRAG's document store as ragbench's ingest and cleanup use it: the documents listed, texts inserted in
batches within the server's body limit, their insert tracks polled until every document is processed or failed,
documents deleted and waited for; what the target's ingest did (`LightRAGIngest`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from bench.core.http import HttpClient, HttpStatusError, Reply

MAX_BODY_BYTES = 900_000  # LightRAG refuses bodies over 1 MiB; leave room for JSON escaping
POLL_S = 1.0
DELETION_STARTED = "deletion_started"  # the status of a delete the server accepted


class DocStatus(StrEnum):
    """The final statuses of a LightRAG document (lowercased as read); others are still in its pipeline."""

    PROCESSED = "processed"
    FAILED = "failed"


class LightRAGIngestFigures(TypedDict):
    """`config.ingest` of a LightRAG target."""

    inserted: int
    already_present: int
    processed: int
    failed: dict[str, str]  # file_source -> LightRAG's error_msg
    seconds: float
    docs_per_s: float | None
    cost: dict[str, float]


@dataclass
class LightRAGIngest:
    inserted: int = 0
    already_present: int = 0
    processed: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # file_source -> LightRAG's error_msg
    seconds: float = 0.0
    cost: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> LightRAGIngestFigures:
        return {
            "inserted": self.inserted,
            "already_present": self.already_present,
            "processed": self.processed,
            "failed": dict(self.failed),
            "seconds": round(self.seconds, 3),
            "docs_per_s": round(self.inserted / self.seconds, 3) if self.seconds and self.inserted else None,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class ListedDocument:
    """A document as LightRAG's /documents/paginated lists it: the fields ragbench reads."""

    id: str
    status: str  # as the server wrote it (PROCESSED, processed, ...)
    error_msg: str
    chunks_count: int | None  # None where the server counts none
    created_at: object  # ISO 8601 text where the server gives one (bench.ingest.lightrag reads it)
    updated_at: object

    @classmethod
    def of(cls, entry: dict[str, object]) -> ListedDocument:
        chunks = entry.get("chunks_count")
        return cls(
            id=str(entry.get("id")),
            status=str(entry.get("status", "")),
            error_msg=str(entry.get("error_msg")),
            chunks_count=chunks if isinstance(chunks, int) else None,
            created_at=entry.get("created_at"),
            updated_at=entry.get("updated_at"),
        )

    @property
    def state(self) -> str:
        """The status lowercased: a DocStatus when final."""
        return self.status.lower()


def documents_on_server(http: HttpClient) -> dict[str, ListedDocument]:
    """file_path -> every document on the server."""
    found: dict[str, ListedDocument] = {}
    page = 1
    while True:
        reply = http.json(
            "POST",
            "/documents/paginated",
            json={"page": page, "page_size": 200, "sort_field": "id", "sort_direction": "asc"},
        )
        documents = reply.get("documents", kind=list)
        for i in range(len(documents)):
            found[reply.get("documents", i, "file_path", kind=str)] = ListedDocument.of(
                reply.get("documents", i, kind=dict)
            )
        if not documents or not reply.get("pagination", "has_next", kind=bool, default=False):
            return found
        page += 1


@dataclass
class CorpusOnServer:
    """The corpus's documents (by file_source) against the server's list."""

    new: list[str]  # not on the server: to insert
    processed: list[str]  # already processed by an earlier run
    failed: dict[str, str]  # already on the server, failed: file_source -> LightRAG's error_msg


def corpus_on_server(http: HttpClient, sources: list[str]) -> CorpusOnServer:
    """Where each of `sources` stands on the server; documents of an earlier run still in LightRAG's pipeline are
    one error (not ours to wait for or clean up)."""
    on_server = documents_on_server(http)
    found = CorpusOnServer([], [], {})
    unfinished = []
    for source in sources:
        existing = on_server.get(source)
        if existing is None:
            found.new.append(source)
        elif existing.state == DocStatus.FAILED:
            found.failed[source] = existing.error_msg
        elif existing.state == DocStatus.PROCESSED:
            found.processed.append(source)
        else:
            unfinished.append(source)
    if unfinished:
        raise http.error(
            f"{len(unfinished)} corpus documents are still {on_server[unfinished[0]].status} on the server "
            f"(e.g. {unfinished[0]}); let LightRAG's pipeline finish, then run again"
        )
    return found


def insert_batches(todo: list[tuple[str, str]], batch: int) -> list[list[tuple[str, str]]]:
    """(file_source, text) pairs in batches of at most `batch` texts and MAX_BODY_BYTES."""
    batches: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    size = 0
    for source, text in todo:
        item_size = len(text.encode("utf-8")) + len(source) + 16
        if current and (len(current) >= batch or size + item_size > MAX_BODY_BYTES):
            batches.append(current)
            current, size = [], 0
        current.append((source, text))
        size += item_size
    if current:
        batches.append(current)
    return batches


def insert_texts(http: HttpClient, batch: list[tuple[str, str]], timeout_s: float) -> str:
    """One batch inserted (`/documents/texts`); its track id."""
    body = {"texts": [text for _, text in batch], "file_sources": [source for source, _ in batch]}
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            reply = http.json("POST", "/documents/texts", json=body)
            break
        except HttpStatusError as exc:
            # 409 "Pipeline is clearing or deleting documents. Wait for the running job to finish": LightRAG
            # still deletes in the background after the deleted documents left its list (ours or another
            # client's), and takes nothing new meanwhile. Wait for it as the server asks, up to the timeout.
            if exc.status != 409 or time.monotonic() > deadline:
                raise
            time.sleep(POLL_S)
    track_id: str = reply.get("track_id", kind=str, default="")
    if not track_id:
        raise reply.wrong_shape("no track_id")
    return track_id


def delete_documents(http: HttpClient, doc_ids: list[str], timeout_s: float) -> None:
    """Ask for the deletion, then poll until the server lists none of `doc_ids`: LightRAG answers
    `deletion_started` at once (even for unknown ids) and deletes in the background."""
    deadline = time.monotonic() + timeout_s
    while True:  # deletes answer "busy" while the pipeline works; wait for it
        reply = http.json(
            "DELETE",
            "/documents/delete_document",
            json={"doc_ids": doc_ids, "delete_file": False, "delete_llm_cache": True},
        )
        if reply.get("status", kind=str) == DELETION_STARTED:
            break
        if time.monotonic() > deadline:
            raise http.error(f"delete refused until the deadline: {reply.get('message', default='')}")
        time.sleep(POLL_S)
    wanted = set(doc_ids)
    while True:
        left = wanted & {doc.id for doc in documents_on_server(http).values()}
        if not left:
            break
        if time.monotonic() > deadline:
            raise http.error(
                f"{len(left)} of {len(doc_ids)} inserted documents still listed "
                f"{timeout_s} s after their deletion started (e.g. {min(left)})"
            )
        time.sleep(POLL_S)


@dataclass(frozen=True)
class TrackedDocument:
    """One document of an insert track as LightRAG lists it."""

    doc_id: str
    source: str  # its file_path: ragbench's file_source
    status: str  # lowercased
    error: str  # LightRAG's error_msg as text ("None" where it gave none)

    @property
    def final(self) -> bool:
        return self.status in tuple(DocStatus)


def tracked_document(reply: Reply, i: int) -> TrackedDocument:
    doc_id = reply.get("documents", i, "id", kind=str)
    return TrackedDocument(
        doc_id=doc_id,
        source=reply.get("documents", i, "file_path", kind=str, default=doc_id),
        status=reply.get("documents", i, "status", kind=str).lower(),
        error=str(reply.get("documents", i, "error_msg", default=None)),
    )


@dataclass
class TrackWatch:
    """Insert tracks polled until each of their documents is processed or failed."""

    http: HttpClient
    track_ids: list[str]
    seen: list[str] = field(default_factory=list)  # every document id the tracks listed, first seen first
    final: dict[str, TrackedDocument] = field(default_factory=dict)  # doc id -> its first final listing

    def wait(self, expected: int, timeout_s: float, advance: Callable[[int], None]) -> None:
        """Poll every POLL_S until each track's documents are final; past `timeout_s`, one error."""
        deadline = time.monotonic() + timeout_s
        pending = set(self.track_ids)
        while pending:
            pending -= {track_id for track_id in sorted(pending) if self._poll(track_id, advance)}
            if not pending:
                break
            if time.monotonic() > deadline:
                raise self.http.error(
                    f"{expected - len(self.final)} of {expected} documents not processed within {timeout_s} s"
                )
            time.sleep(POLL_S)

    def _poll(self, track_id: str, advance: Callable[[int], None]) -> bool:
        """True: every document of the track is final."""
        reply = self.http.json("GET", f"/documents/track_status/{track_id}")
        documents = [tracked_document(reply, i) for i in range(len(reply.get("documents", kind=list)))]
        for doc in documents:
            if doc.doc_id not in self.seen:
                self.seen.append(doc.doc_id)
            if doc.final and doc.doc_id not in self.final:
                self.final[doc.doc_id] = doc
                advance(1)
        return bool(documents) and all(doc.final for doc in documents)
