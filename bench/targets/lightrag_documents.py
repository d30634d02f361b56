"""LightRAG's document store as ragbench's ingest and cleanup use it: the documents listed, texts inserted in
batches within the server's body limit, documents deleted and waited for; what the ingest did (`LightRAGIngest`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bench.core.http import HttpClient, HttpStatusError

MAX_BODY_BYTES = 900_000  # LightRAG refuses bodies over 1 MiB; leave room for JSON escaping
POLL_S = 1.0
DELETION_STARTED = "deletion_started"  # the status of a delete the server accepted


class DocStatus(StrEnum):
    """The final statuses of a LightRAG document (lowercased as read); others are still in its pipeline."""

    PROCESSED = "processed"
    FAILED = "failed"


@dataclass
class LightRAGIngest:
    inserted: int = 0
    already_present: int = 0
    processed: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # file_source -> LightRAG's error_msg
    seconds: float = 0.0
    cost: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "inserted": self.inserted,
            "already_present": self.already_present,
            "processed": self.processed,
            "failed": dict(self.failed),
            "seconds": round(self.seconds, 3),
            "docs_per_s": round(self.inserted / self.seconds, 3) if self.seconds and self.inserted else None,
            "cost": self.cost,
        }


def documents_on_server(http: HttpClient) -> dict[str, dict[str, Any]]:
    """file_path -> status record of every document on the server."""
    found: dict[str, dict[str, Any]] = {}
    page = 1
    while True:
        reply = http.json(
            "POST",
            "/documents/paginated",
            json={"page": page, "page_size": 200, "sort_field": "id", "sort_direction": "asc"},
        )
        documents = reply.get("documents", kind=list)
        for i in range(len(documents)):
            found[reply.get("documents", i, "file_path", kind=str)] = reply.get("documents", i, kind=dict)
        if not documents or not reply.get("pagination", "has_next", kind=bool, default=False):
            return found
        page += 1


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
        left = wanted & {str(doc.get("id")) for doc in documents_on_server(http).values()}
        if not left:
            break
        if time.monotonic() > deadline:
            raise http.error(
                f"{len(left)} of {len(doc_ids)} inserted documents still listed "
                f"{timeout_s} s after their deletion started (e.g. {min(left)})"
            )
        time.sleep(POLL_S)
