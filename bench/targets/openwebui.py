"""Open WebUI as a retrieval target: a knowledge base that ragbench fills, queried through the
retrieval API, with the search mode set through the server's retrieval settings.

Spec: `openwebui[:vector|hybrid|rerank]@URL?kb=NAME&endpoint=doc|collection&bm25_weight=W
       &reranker_url=URL&reranker_model=NAME&concurrency=N&max_chunks=N`
Key: `OPENWEBUI_API_KEY` (an admin's `sk-…` key or JWT: the retrieval settings are admin-only).

- Ingest: one text file per distinct corpus text (`<doc id>.txt`, the id also in the upload's
  `metadata`, which Open WebUI merges into every chunk), uploaded with processing in the foreground,
  its processing status checked (a 200 upload can still have failed to embed), then attached to the
  knowledge base. A file already in the knowledge base is reused only when its name, the SHA-256 of
  its bytes and its processing status (completed, vectors stored) all match; a file of the same name
  with other content or unfinished processing stops the run (its chunks would be ranked as this corpus).
- Search: Open WebUI returns chunks (CHUNK_SIZE characters, default 1000); chunks map to documents by
  first rank. To fill `depth` documents, ragbench asks for 2×depth chunks and doubles while the
  ranking is short and the server had more, up to `max_chunks`. The returned chunk texts (title
  removed) are each query's `passages`, which answer measures score.
- Variants are applied with `/api/v1/retrieval/config/update`; the fields changed are saved first,
  stored in `describe()` (keys masked) and written back in `close()`. The rerank variant sets the
  reranker's key from `RAG_EXTERNAL_RERANKER_API_KEY`; when that is unset, the server's own reranker key
  is kept for the server's own reranker URL and emptied for any other (it is never sent elsewhere).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench.core.errors import ServerError, UserError
from bench.core.http import HttpClient, Reply, auth_headers, error_message, key_from_env
from bench.core.secrets import mask_data
from bench.datasets.model import Dataset
from bench.targets.base import Hit, ProgressFactory, QueryResult, TargetOptions, TargetSpec, first_rank_wins
from bench.targets.http_shared import DedupedCorpus, file_name, parallel, run_queries, timed_query
from bench.targets.params import check_params, float_param, int_param

KEY_ENV = "OPENWEBUI_API_KEY"
RERANKER_KEY_ENV = "RAG_EXTERNAL_RERANKER_API_KEY"
DEFAULT_URL = "http://localhost:8080"
VARIANTS = ("vector", "hybrid", "rerank")
PARAMS = {
    "kb",
    "endpoint",
    "bm25_weight",
    "reranker_url",
    "reranker_model",
    "reranker_timeout",
    "concurrency",
    "query_concurrency",
    "max_chunks",
}
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
DOC_ID_KEY = "ragbench_doc_id"


def content_hash(text: str) -> str:
    """What Open WebUI stores as a file's `meta.file_hash`: SHA-256 of the uploaded bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredFile:
    """A file a knowledge base already holds."""

    file_id: str
    file_hash: str | None  # SHA-256 of its bytes
    vectors_hash: str | None  # Open WebUI's `hash`: set once its vectors are stored, cleared when processing fails


@dataclass
class IngestReport:
    uploaded: int = 0
    already_present: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # doc id -> server's error
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "uploaded": self.uploaded,
            "already_present": self.already_present,
            "failed": len(self.failed),
            "failed_examples": dict(list(self.failed.items())[:10]),
            "seconds": round(self.seconds, 3),
            "docs_per_s": round(self.uploaded / self.seconds, 3) if self.seconds and self.uploaded else None,
        }


class OpenWebUITarget:
    def __init__(self, spec: TargetSpec, options: TargetOptions):
        check_params(spec.params, PARAMS, spec.text)
        self.name = spec.name
        self.spec = spec
        self.variant = spec.variant or "vector"
        if self.variant not in VARIANTS:
            raise UserError(f"target {spec.text!r}: variant {self.variant!r} unknown (known: {', '.join(VARIANTS)})")
        if spec.rerank:
            raise UserError(f"target {spec.text!r}: use the 'openwebui:rerank' variant, not '+rerank'")
        params = spec.params
        self.endpoint = params.get("endpoint", "doc")
        if self.endpoint not in ("doc", "collection"):
            raise UserError(f"target {spec.text!r}: endpoint must be 'doc' or 'collection'")
        self.kb_name = params.get("kb")
        self.bm25_weight = float_param(params, "bm25_weight", 0.5, spec.text, 0.0, 1.0)
        self.reranker_url = params.get("reranker_url")
        self.reranker_model = params.get("reranker_model")
        self.reranker_timeout = params.get("reranker_timeout", "30")
        if self.variant == "rerank" and not (self.reranker_url and self.reranker_model):
            raise UserError(f"target {spec.text!r}: the rerank variant needs reranker_url=URL&reranker_model=NAME")
        self.concurrency = int_param(params, "concurrency", 4, spec.text)
        self.query_concurrency = int_param(params, "query_concurrency", 1, spec.text)  # 1: unloaded latency
        self.max_chunks = int_param(params, "max_chunks", 0, spec.text, minimum=0)  # 0: 16 × depth
        key = key_from_env(f"target {spec.public_text!r}", KEY_ENV, required=False)
        if not key:
            raise UserError(f"target {spec.public_text!r}: set {KEY_ENV} to an Open WebUI admin API key")
        # Read now, so that a key given for the reranker is known to the masking before anything is written.
        self.reranker_key = key_from_env(f"target {spec.public_text!r}", RERANKER_KEY_ENV, required=False) or ""
        self.created: list[str] = []
        url, headers = auth_headers(
            f"target {spec.public_text!r}", spec.url or DEFAULT_URL, key, key_name=f"${KEY_ENV}"
        )
        self.http = HttpClient(
            f"Open WebUI at {url}", url, headers, timeout_s=300.0, created=self.created, key_env=KEY_ENV
        )
        self.kb_id: str | None = None
        self.version: str | None = None
        self.saved_settings: dict[str, Any] | None = None  # the server's values before ragbench changed them
        self.applied_settings: dict[str, Any] = {}
        self.retrieval_config: dict[str, Any] = {}
        self.embedding_config: dict[str, Any] = {}
        self.ingest = IngestReport()
        self.corpus: DedupedCorpus | None = None
        self.file_to_doc: dict[str, str] = {}  # Open WebUI file id -> representative doc id
        self.uploaded_ids: list[str] = []
        self._files_entry: int | None = None
        self._restored = False
        self._lock = threading.Lock()

    # -- protocol ---------------------------------------------------------------------------------

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self.version = self.http.json("GET", "/api/version").get("version", kind=str, default=None)
        self.retrieval_config = self.http.json("GET", "/api/v1/retrieval/config").get(kind=dict)
        self.embedding_config = self.http.json("GET", "/api/v1/retrieval/embedding").get(kind=dict)
        self.corpus = DedupedCorpus.of(dataset.corpus)
        self.kb_id = self._knowledge_base(self.kb_name or f"ragbench-{dataset.name}-{dataset.fingerprint()}")
        self._ingest(progress)
        self._apply_variant()

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.kb_id is None:
            raise UserError(f"{self.name}: search() before prepare()")
        advance = progress(f"{self.name}: querying", len(queries))
        return run_queries(
            queries,
            lambda qid, text: timed_query(qid, lambda: self._rank(text, depth)),
            self.query_concurrency,
            advance,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "openwebui",
            "variant": self.variant,
            "url": self.http.base_url,
            "server_version": self.version,
            "endpoint": f"/api/v1/retrieval/query/{self.endpoint}",
            "knowledge_base": {"name": self.kb_name, "id": self.kb_id},
            "chunking": {
                "splitter": self.retrieval_config.get("TEXT_SPLITTER") or "character",
                "chunk_size": self.retrieval_config.get("CHUNK_SIZE"),
                "chunk_overlap": self.retrieval_config.get("CHUNK_OVERLAP"),
                "mapping": "chunk -> document, first rank wins; chunks requested: 2×depth, doubled while short",
            },
            "settings_before": mask_data(self.saved_settings),
            "settings_applied": mask_data(self.applied_settings),  # settings_before is written back in close()
            "retrieval_config": mask_data({k: v for k, v in self.retrieval_config.items() if k != "web"}),
            "embedding_config": mask_data(self.embedding_config),
            "ingest": self.ingest.as_dict(),
            "corpus": self.corpus.describe() if self.corpus else None,
        }

    def close(self) -> None:
        """Write the saved retrieval settings back; safe to call twice and after any failure."""
        try:
            if self.saved_settings is not None and not self._restored:
                try:
                    self.http.call("POST", "/api/v1/retrieval/config/update", json=self.saved_settings)
                except ServerError as exc:
                    raise self.http.error(
                        f"retrieval settings NOT restored, set them back by hand to {mask_data(self.saved_settings)} "
                        f"({exc.args[0].split(': ', 1)[-1]})"
                    ) from None
                self._restored = True
        finally:
            self.http.close()

    # -- ingest -----------------------------------------------------------------------------------

    def _knowledge_base(self, name: str) -> str:
        self.kb_name = name
        page = 1
        while True:
            reply = self.http.json("GET", "/api/v1/knowledge/", params={"page": page})
            items = reply.get("items", kind=list)
            for i in range(len(items)):
                if reply.get("items", i, "name", kind=str, default="") == name:
                    return reply.get("items", i, "id", kind=str)
            if not items or page * len(items) >= reply.get("total", kind=int, default=0):
                break
            page += 1
        created = self.http.json(
            "POST", "/api/v1/knowledge/create", json={"name": name, "description": "created by ragbench"}
        ).get("id", kind=str)
        self.created.append(f"knowledge base '{name}' ({created})")
        return created

    def _existing_files(self) -> dict[str, StoredFile]:
        """File name -> what the knowledge base already holds under that name."""
        found: dict[str, StoredFile] = {}
        page = 1
        while True:
            reply = self.http.json("GET", f"/api/v1/knowledge/{self.kb_id}/files", params={"page": page, "limit": 500})
            items = reply.get("items", kind=list)
            for i in range(len(items)):
                name = reply.get("items", i, "meta", "name", kind=str, default=None) or reply.get(
                    "items", i, "filename", kind=str
                )
                found[name] = StoredFile(
                    reply.get("items", i, "id", kind=str),
                    reply.get("items", i, "meta", "file_hash", kind=str, default=None),
                    reply.get("items", i, "hash", kind=str, default=None),
                )
            if not items or len(found) >= reply.get("total", kind=int, default=0):
                return found
            page += 1

    def _ingest(self, progress: ProgressFactory) -> None:
        assert self.corpus is not None
        existing = self._existing_files()
        todo, stale = [], {}
        candidates: dict[str, StoredFile] = {}  # doc id -> a file of its name whose bytes match
        for doc_id, doc in self.corpus.documents.items():
            stored = existing.get(file_name(doc_id))
            if stored is None:
                todo.append(doc_id)
            elif stored.file_hash != content_hash(doc.full_text):
                stale[doc_id] = "its content differs from the corpus text"
            elif stored.vectors_hash is None:  # set only once the file's vectors were stored
                stale[doc_id] = "its processing never completed"
            else:
                candidates[doc_id] = stored
        statuses = parallel(list(candidates.values()), self._process_status, self.concurrency, lambda n: None)
        for (doc_id, stored), status in zip(candidates.items(), statuses):
            if status == "completed":
                self.file_to_doc[stored.file_id] = doc_id
                self.ingest.already_present += 1
            else:
                stale[doc_id] = f"its processing status is {status!r}"
        if stale:
            doc_id, why = next(iter(stale.items()))
            raise self.http.error(
                f"knowledge base '{self.kb_name}' already holds {len(stale)} file(s) named like corpus documents that "
                f"cannot be reused (first: {file_name(doc_id)}: {why}); their chunks would be ranked as this corpus: "
                "remove them or choose another kb=NAME"
            )
        advance = progress(f"{self.name}: uploading to '{self.kb_name}'", len(todo))
        start = time.perf_counter()
        try:
            parallel(todo, self._upload, self.concurrency, advance)
        finally:
            self.ingest.seconds = time.perf_counter() - start
        if self.ingest.failed:
            first_id, first_error = next(iter(self.ingest.failed.items()))
            raise self.http.error(
                f"{len(self.ingest.failed)} of {len(todo)} files failed processing "
                f"(embedder failure behind a 200 upload?); first: {first_id}: {first_error}"
            )

    def _process_status(self, stored: StoredFile) -> str | None:
        return self.http.json("GET", f"/api/v1/files/{stored.file_id}/process/status").get(
            "status", kind=str, default=None
        )

    def _upload(self, doc_id: str) -> None:
        assert self.corpus is not None
        doc = self.corpus.documents[doc_id]
        name = file_name(doc_id)
        file_id = self.http.json(
            "POST",
            "/api/v1/files/",
            params={"process": "true", "process_in_background": "false"},
            files={"file": (name, doc.full_text.encode("utf-8"), "text/plain")},
            data={"metadata": json.dumps({DOC_ID_KEY: doc_id})},
        ).get("id", kind=str)
        self._note_created(file_id)
        # A 200 upload can still have failed to embed: the status says so, the file record says why.
        status = self._process_status(StoredFile(file_id, None, None))
        if status != "completed":
            record = self.http.json("GET", f"/api/v1/files/{file_id}")
            error = record.get("data", "error", kind=object, default=None) or f"status {status!r}"
            with self._lock:
                self.ingest.failed[doc_id] = str(error)[:300]
            return
        response = self.http.call(
            "POST", f"/api/v1/knowledge/{self.kb_id}/file/add", ok=(200, 400), json={"file_id": file_id}
        )
        if response.status_code == 400:
            with self._lock:
                self.ingest.failed[doc_id] = f"knowledge base refused the file: {error_message(response)[0][:200]}"
            return
        with self._lock:
            self.file_to_doc[file_id] = doc_id
            self.ingest.uploaded += 1

    def _note_created(self, file_id: str) -> None:
        # One summary line in `created` (ids are in the server's file list), kept current.
        with self._lock:
            self.uploaded_ids.append(file_id)
            summary = f"{len(self.uploaded_ids)} file(s) uploaded for knowledge base '{self.kb_name}'"
            if self._files_entry is None:
                self._files_entry = len(self.created)
                self.created.append(summary)
            else:
                self.created[self._files_entry] = summary

    # -- variant settings -------------------------------------------------------------------------

    def _apply_variant(self) -> None:
        wanted: dict[str, Any] = {"ENABLE_RAG_HYBRID_SEARCH": self.variant != "vector", "RELEVANCE_THRESHOLD": 0.0}
        if self.variant in ("hybrid", "rerank"):
            wanted["HYBRID_BM25_WEIGHT"] = self.bm25_weight
        if self.variant == "hybrid":
            # No reranking model: Open WebUI scores the fused candidates by embedding similarity.
            wanted.update({"RAG_RERANKING_ENGINE": "", "RAG_RERANKING_MODEL": ""})
        if self.variant == "rerank":
            wanted.update(
                {
                    "RAG_RERANKING_ENGINE": "external",
                    "RAG_RERANKING_MODEL": self.reranker_model,
                    "RAG_EXTERNAL_RERANKER_URL": self.reranker_url,
                    "RAG_EXTERNAL_RERANKER_TIMEOUT": self.reranker_timeout,
                }
            )
            # The key from the environment; without one, the server's own key stays only for its own reranker URL.
            if self.reranker_key or self.retrieval_config.get("RAG_EXTERNAL_RERANKER_URL") != self.reranker_url:
                wanted["RAG_EXTERNAL_RERANKER_API_KEY"] = self.reranker_key
        self.saved_settings = {k: self.retrieval_config.get(k) for k in SETTINGS if k in self.retrieval_config}
        self.applied_settings = wanted
        self.http.call("POST", "/api/v1/retrieval/config/update", json=wanted)
        # The server can quietly switch hybrid search off when the reranker fails to load: check.
        self.retrieval_config = self.http.json("GET", "/api/v1/retrieval/config").get(kind=dict)
        ignored = {k: self.retrieval_config.get(k) for k, v in wanted.items() if self.retrieval_config.get(k) != v}
        if ignored:
            raise self.http.error(f"retrieval settings not taken (reranker failed to load?): now {mask_data(ignored)}")

    # -- search -----------------------------------------------------------------------------------

    def _query(self, query: str, k: int) -> Reply:
        body: dict[str, Any] = {"query": query, "k": k}
        if self.variant != "vector":
            body.update({"k_reranker": k, "hybrid_bm25_weight": self.bm25_weight})
        if self.endpoint == "doc":
            body["collection_name"] = self.kb_id
        else:
            body["collection_names"] = [self.kb_id]
        path = f"/api/v1/retrieval/query/{self.endpoint}"
        response = self.http.call("POST", path, ok=(200, 400), json=body)
        if response.status_code == 400:
            detail = error_message(response)[0]
            if self.variant == "rerank" and "Error querying knowledge base" in detail:
                raise self.http.error(f"reranker-error: HTTP 400 on {path}: {detail} (reranker failing?)")
            raise self.http.error(f"HTTP 400 on {path}: {detail}")
        return self.http.reply(response)

    def _rank(self, query: str, depth: int) -> tuple[list[Hit], list[str], list[str]]:
        assert self.corpus is not None
        cap = self.max_chunks or 16 * depth
        k = min(2 * depth, cap)
        while True:
            reply = self._query(query, k)
            if reply.body is None:  # /query/doc answers `null` for a collection it does not have
                raise self.http.error(f"knowledge base {self.kb_id} has no vector collection")
            distances = reply.get("distances", 0, kind=list, default=[])
            metadatas = reply.get("metadatas", 0, kind=list, default=[])
            chunks = reply.get("documents", 0, kind=list, default=[])  # the chunk texts, which answer measures score
            if not len(distances) == len(metadatas) == len(chunks):
                raise reply.wrong_shape(
                    f"{len(distances)} distances, {len(metadatas)} metadatas, {len(chunks)} documents"
                )
            for i in range(len(metadatas)):  # each chunk's metadata an object, score a number, text a string (or null)
                reply.get("metadatas", 0, i, kind=(dict, type(None)))
                reply.get("distances", 0, i, kind=(int, float, type(None)))
                reply.get("documents", 0, i, kind=(str, type(None)))
            warnings = []
            if len(metadatas) > k:
                warnings.append("more-results-than-asked")
            if any(d is None for d in distances):
                if self.variant == "rerank":
                    # Open WebUI's silent fallback: its reranker failed and it answered the fused candidates
                    # unscored. A failed part fails its query (bench/targets/base.py), never the other part alone.
                    raise self.http.error(
                        f"reranker-error: {len(metadatas)} results with null scores from /query/{self.endpoint} "
                        "(Open WebUI's unreranked fallback when its reranker fails)"
                    )
                warnings.append("null-scores")
            pairs = []
            unmapped = 0
            chunk_docs = []  # the document of each chunk, None where it maps to none
            for meta, score in zip(metadatas, distances, strict=False):
                doc_id = (meta or {}).get(DOC_ID_KEY) or self.file_to_doc.get((meta or {}).get("file_id", ""))
                chunk_docs.append(None if doc_id is None else str(doc_id))
                if doc_id is None:
                    unmapped += 1
                    continue
                pairs.append((str(doc_id), score))
            if unmapped:
                warnings.append("unmapped-chunks")
            hits = first_rank_wins(self.corpus.expand(pairs), depth)
            # Short of depth while the server had more chunks: ask for more. Anomalies stop here.
            if len(hits) >= depth or len(metadatas) < k or k >= cap or warnings:
                # What answer measures score: every returned chunk's text, without the ingested title.
                texts = [
                    self.corpus.chunk_text(doc_id, str(text or ""))
                    for doc_id, text in zip(chunk_docs, chunks, strict=False)
                ]
                return hits, warnings, texts
            k = min(2 * k, cap)


def build_openwebui(spec: TargetSpec, options: TargetOptions) -> OpenWebUITarget:
    return OpenWebUITarget(spec, options)
