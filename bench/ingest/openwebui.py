"""One combination's ingest through Open WebUI: a fresh knowledge base, every document uploaded and processed
(timed from upload to processed), then the knowledge base listed to find what failed or was silently dropped."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from bench.core.http import HttpClient, HttpStatusError
from bench.core.progress import ProgressFactory
from bench.targets.http_shared import DedupedCorpus, file_name, parallel
from bench.targets.openwebui_knowledge import existing_files, knowledge_base, upload_to_knowledge


@dataclass
class DocumentIngest:
    """One document's upload: its time from upload to processed (or failed), and why it failed."""

    doc_id: str
    seconds: float
    error: str | None


@dataclass
class MadeOnServer:
    """What one combination made on the server, noted as soon as it exists: what `remove_knowledge` deletes, also
    when the combination ends half-way (an error, Ctrl-C, SIGTERM)."""

    kb_id: str | None = None
    file_ids: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def file(self, file_id: str) -> None:
        with self.lock:
            self.file_ids.append(file_id)


@dataclass
class KnowledgeIngest:
    """What one combination did to its knowledge base."""

    kb_id: str
    kb_name: str
    seconds: float  # first upload to the last document processed
    documents: list[DocumentIngest]
    processed: set[str]  # listed afterwards with its vectors stored

    @property
    def failed(self) -> dict[str, str]:
        return {d.doc_id: d.error for d in self.documents if d.error is not None}

    @property
    def lost(self) -> list[str]:
        """Accepted without an error, yet not listed with its vectors afterwards: silently dropped."""
        return [d.doc_id for d in self.documents if d.error is None and d.doc_id not in self.processed]


def ingest_knowledge(
    http: HttpClient,
    corpus: DedupedCorpus,
    kb_name: str,
    concurrency: int,
    progress: ProgressFactory,
    made: MadeOnServer,
) -> KnowledgeIngest:
    """Upload every document of `corpus` into a new knowledge base `kb_name`, `concurrency` at a time; what it
    makes is noted in `made` as it goes."""
    created: list[str] = []
    kb_id = knowledge_base(http, kb_name, created)
    if not created:
        raise http.error(f"knowledge base '{kb_name}' already exists: each combination needs a fresh one")
    made.kb_id = kb_id

    def one(doc_id: str) -> DocumentIngest:
        started = time.perf_counter()
        text = corpus.documents[doc_id].full_text
        try:
            _, error = upload_to_knowledge(http, kb_id, file_name(doc_id), text, doc_id, made.file)
        except HttpStatusError as exc:  # this document refused; the server is still there for the others
            error = exc.args[0].split(": ", 1)[-1][:300]
        return DocumentIngest(doc_id, time.perf_counter() - started, error)

    advance = progress(f"uploading to '{kb_name}'", len(corpus.documents))
    started = time.perf_counter()
    documents = parallel(list(corpus.documents), one, concurrency, advance)
    seconds = time.perf_counter() - started
    listed = existing_files(http, kb_id)
    processed = {
        doc_id
        for doc_id in corpus.documents
        if (stored := listed.get(file_name(doc_id))) is not None and stored.vectors_hash is not None
    }
    return KnowledgeIngest(kb_id, kb_name, seconds, documents, processed)


def remove_knowledge(http: HttpClient, made: MadeOnServer) -> None:
    """Delete the knowledge base and the files this ingest made (nothing else)."""
    for file_id in made.file_ids:
        http.call("DELETE", f"/api/v1/files/{file_id}", ok=(200, 404))
    if made.kb_id is not None:
        http.call("DELETE", f"/api/v1/knowledge/{made.kb_id}/delete", ok=(200, 404))
