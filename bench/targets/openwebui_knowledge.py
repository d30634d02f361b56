"""An Open WebUI knowledge base and its files as ragbench's ingest reads them: found or created by name, the
files it already holds, a file's processing status, and what the ingest did."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from bench.core.http import HttpClient, Reply, error_message
from bench.core.progress import console
from bench.targets.openwebui_chunks import DOC_ID_KEY


def content_hash(text: str) -> str:
    """What Open WebUI stores as a file's `meta.file_hash`: SHA-256 of the uploaded bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredFile:
    """A file a knowledge base already holds."""

    file_id: str
    file_hash: str | None  # SHA-256 of its bytes
    vectors_hash: str | None  # Open WebUI's `hash`: set once its vectors are stored, cleared when processing fails


class OpenWebUIIngestFigures(TypedDict):
    """`config.ingest` of an Open WebUI target."""

    uploaded: int
    already_present: int
    failed: int
    failed_examples: dict[str, str]  # doc id -> the server's error
    skipped_empty: int
    skipped_empty_examples: list[str]
    seconds: float
    docs_per_s: float | None


@dataclass
class IngestReport:
    uploaded: int = 0
    already_present: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # doc id -> server's error
    seconds: float = 0.0
    # Documents with no text: Open WebUI refuses them (HTTP 400 "The content provided is empty"), so they are not
    # uploaded and can never be retrieved (each still counts among the judged documents).
    skipped_empty: list[str] = field(default_factory=list)

    def as_dict(self) -> OpenWebUIIngestFigures:
        return {
            "uploaded": self.uploaded,
            "already_present": self.already_present,
            "failed": len(self.failed),
            "failed_examples": dict(list(self.failed.items())[:10]),
            "skipped_empty": len(self.skipped_empty),
            "skipped_empty_examples": self.skipped_empty[:10],
            "seconds": round(self.seconds, 3),
            "docs_per_s": round(self.uploaded / self.seconds, 3) if self.seconds and self.uploaded else None,
        }


MAX_PAGES = 1000  # 500 files a page: half a million files, past any knowledge base ragbench makes


def pages(http: HttpClient, path: str, params: dict[str, int]) -> Iterator[Reply]:
    """Each page of an Open WebUI listing, in order, until its `total` items were seen or a page is empty. Bounded
    against a server that ignores `page` (every page the first again): a page that adds no item not seen already
    ends the listing, and so does the MAX_PAGES-th; either is said in one line."""
    seen: set[str] = set()
    for page in range(1, MAX_PAGES + 1):
        reply = http.json("GET", path, params={**params, "page": page})
        count = len(reply.get("items", kind=list))
        ids = {reply.get("items", i, "id", kind=str) for i in range(count)}
        if not ids - seen:
            if count:
                _say(f"{http.base_url}{path} answered page {page} with items of earlier pages (it ignores `page`?)")
            return
        seen |= ids
        yield reply
        if len(seen) >= reply.get("total", kind=int, default=0):
            return
    _say(f"{http.base_url}{path}: still more items after {MAX_PAGES} pages")


def _say(why: str) -> None:
    console.print(f"ragbench: {why}: the listing stops there", markup=False, highlight=False, soft_wrap=True)


KB_DESCRIPTION = "created by ragbench"


def knowledge_base_text(name: str) -> str:
    """What Open WebUI 0.12.4 embeds for a knowledge base itself when it is created (routers/knowledge.py: its name,
    a blank line, its description), into its `knowledge-bases` collection: no chunk of any document."""
    return f"{name}\n\n{KB_DESCRIPTION}"


def knowledge_base(http: HttpClient, name: str, created: list[str]) -> str:
    """The id of the knowledge base named `name`, created (and noted in `created`) when there is none."""
    for reply in pages(http, "/api/v1/knowledge/", {}):
        for i in range(len(reply.get("items", kind=list))):
            if reply.get("items", i, "name", kind=str, default="") == name:
                found: str = reply.get("items", i, "id", kind=str)
                return found
    made: str = http.json("POST", "/api/v1/knowledge/create", json={"name": name, "description": KB_DESCRIPTION}).get(
        "id", kind=str
    )
    created.append(f"knowledge base '{name}' ({made})")
    return made


def existing_files(http: HttpClient, kb_id: str | None) -> dict[str, StoredFile]:
    """File name -> what the knowledge base already holds under that name."""
    found: dict[str, StoredFile] = {}
    for reply in pages(http, f"/api/v1/knowledge/{kb_id}/files", {"limit": 500}):
        for i in range(len(reply.get("items", kind=list))):
            name = reply.get("items", i, "meta", "name", kind=str, default=None) or reply.get(
                "items", i, "filename", kind=str
            )
            found[name] = StoredFile(
                reply.get("items", i, "id", kind=str),
                reply.get("items", i, "meta", "file_hash", kind=str, default=None),
                reply.get("items", i, "hash", kind=str, default=None),
            )
    return found


class ProcessStatus(StrEnum):
    """A file's processing status on Open WebUI's wire: its vectors are stored once it is `completed`."""

    COMPLETED = "completed"


def process_status(http: HttpClient, file_id: str) -> str | None:
    """The file's processing status ("completed" once its vectors are stored), None where the server tells none."""
    status: str | None = http.json("GET", f"/api/v1/files/{file_id}/process/status").get(
        "status", kind=str, default=None
    )
    return status


def upload_to_knowledge(
    http: HttpClient, kb_id: str, name: str, text: str, doc_id: str, created: Callable[[str], None]
) -> tuple[str, str | None]:
    """Upload `text` as file `name`, processed in the foreground, and attach it to the knowledge base: (file id,
    None) once it is there, or (file id, why not). `created` is told the file id as soon as the server made it."""
    file_id: str = http.json(
        "POST",
        "/api/v1/files/",
        params={"process": "true", "process_in_background": "false"},
        files={"file": (name, text.encode("utf-8"), "text/plain")},
        data={"metadata": json.dumps({DOC_ID_KEY: doc_id})},
    ).get("id", kind=str)
    created(file_id)
    # A 200 upload can still have failed to embed: the status says so, the file record says why.
    status = process_status(http, file_id)
    if status != ProcessStatus.COMPLETED:
        record = http.json("GET", f"/api/v1/files/{file_id}")
        error = record.get("data", "error", kind=object, default=None) or f"status {status!r}"
        return file_id, str(error)[:300]
    response = http.call("POST", f"/api/v1/knowledge/{kb_id}/file/add", ok=(200, 400), json={"file_id": file_id})
    if response.status_code == 400:
        return file_id, f"knowledge base refused the file: {error_message(response)[0][:200]}"
    return file_id, None
