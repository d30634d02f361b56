"""Open WebUI as a retrieval target: a knowledge base that ragbench fills, queried through the
retrieval API, with the search mode set through the server's retrieval settings.

Spec: `openwebui[:vector|hybrid|rerank]@URL?kb=NAME&endpoint=doc|collection&bm25_weight=W
       &reranker_url=URL&reranker_model=NAME&concurrency=N&max_chunks=N`
Key: `OPENWEBUI_API_KEY` (an admin's `sk-…` key or JWT: the retrieval settings are admin-only).

- Ingest: one text file per distinct corpus text (`<doc id>.txt`, the id also in the upload's
  `metadata`, which Open WebUI merges into every chunk), uploaded with processing in the foreground,
  its processing status checked (a 200 upload can still have failed to embed), then attached to the
  knowledge base. Files already in the knowledge base (same name) are not uploaded again.
- Search: Open WebUI returns chunks (CHUNK_SIZE characters, default 1000); chunks map to documents by
  first rank. To fill `depth` documents, ragbench asks for 2×depth chunks and doubles while the
  ranking is short and the server had more, up to `max_chunks`. The returned chunk texts (title
  removed) are each query's `passages`, which answer measures score.
- Variants are applied with `/api/v1/retrieval/config/update`; the fields changed are saved first,
  stored in `describe()` (keys masked) and written back in `close()`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench.datasets.model import Dataset
from bench.errors import ServerError, UserError
from bench.secrets import mask_data
from bench.targets.base import Hit, ProgressFactory, QueryResult, TargetSpec, first_rank_wins
from bench.targets.http import (
    DedupedCorpus,
    HTTPClient,
    api_key,
    detail_of,
    file_name,
    parallel,
    timed_query,
)
from bench.targets.params import check_params, float_param, int_param
from bench.targets.registry import TargetOptions

KEY_ENV = "OPENWEBUI_API_KEY"
DEFAULT_URL = "http://localhost:8080"
VARIANTS = ("vector", "hybrid", "rerank")
PARAMS = {"kb", "endpoint", "bm25_weight", "reranker_url", "reranker_model", "reranker_timeout",
          "concurrency", "query_concurrency", "max_chunks"}
# The retrieval settings a variant may change; exactly these are saved and restored.
SETTINGS = (
    "ENABLE_RAG_HYBRID_SEARCH", "HYBRID_BM25_WEIGHT", "RELEVANCE_THRESHOLD", "RAG_RERANKING_ENGINE",
    "RAG_RERANKING_MODEL", "RAG_EXTERNAL_RERANKER_URL", "RAG_EXTERNAL_RERANKER_API_KEY",
    "RAG_EXTERNAL_RERANKER_TIMEOUT",
)
DOC_ID_KEY = "ragbench_doc_id"


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
        key = api_key(KEY_ENV)
        if not key:
            raise UserError(f"target {spec.text!r}: set {KEY_ENV} to an Open WebUI admin API key")
        self.created: list[str] = []
        self.http = HTTPClient(
            "Open WebUI", spec.url or DEFAULT_URL, {"Authorization": f"Bearer {key}"}, self.created, KEY_ENV
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
        self.version = self.http.call("GET", "/api/version").json().get("version")
        self.retrieval_config = self.http.call("GET", "/api/v1/retrieval/config").json()
        self.embedding_config = self.http.call("GET", "/api/v1/retrieval/embedding").json()
        self.corpus = DedupedCorpus.of(dataset.corpus)
        self.kb_id = self._knowledge_base(self.kb_name or f"ragbench-{dataset.name}-{dataset.fingerprint()}")
        self._ingest(progress)
        self._apply_variant()

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.kb_id is None:
            raise UserError(f"{self.name}: search() before prepare()")
        advance = progress(f"{self.name}: querying", len(queries))
        items = list(queries.items())
        return parallel(items, lambda item: timed_query(item[0], lambda: self._rank(item[1], depth)),
                        self.query_concurrency, advance)

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
            body = self.http.call("GET", "/api/v1/knowledge/", params={"page": page}).json()
            items = body.get("items", []) if isinstance(body, dict) else body
            for kb in items:
                if kb.get("name") == name:
                    return kb["id"]
            if not items or (isinstance(body, dict) and page * len(items) >= body.get("total", 0)):
                break
            page += 1
        created = self.http.call(
            "POST", "/api/v1/knowledge/create", json={"name": name, "description": "created by ragbench"}
        ).json()
        self.created.append(f"knowledge base '{name}' ({created['id']})")
        return created["id"]

    def _existing_files(self) -> dict[str, str]:
        """File name -> file id of what the knowledge base already holds."""
        found: dict[str, str] = {}
        page = 1
        while True:
            body = self.http.call(
                "GET", f"/api/v1/knowledge/{self.kb_id}/files", params={"page": page, "limit": 500}
            ).json()
            for item in body.get("items", []):
                name = (item.get("meta") or {}).get("name") or item.get("filename")
                found[name] = item["id"]
            if not body.get("items") or len(found) >= body.get("total", 0):
                return found
            page += 1

    def _ingest(self, progress: ProgressFactory) -> None:
        assert self.corpus is not None
        existing = self._existing_files()
        todo = []
        for doc_id in self.corpus.documents:
            file_id = existing.get(file_name(doc_id))
            if file_id:
                self.file_to_doc[file_id] = doc_id
                self.ingest.already_present += 1
            else:
                todo.append(doc_id)
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

    def _upload(self, doc_id: str) -> None:
        assert self.corpus is not None
        doc = self.corpus.documents[doc_id]
        name = file_name(doc_id)
        uploaded = self.http.call(
            "POST",
            "/api/v1/files/",
            params={"process": "true", "process_in_background": "false"},
            files={"file": (name, doc.full_text.encode("utf-8"), "text/plain")},
            data={"metadata": json.dumps({DOC_ID_KEY: doc_id})},
        ).json()
        file_id = uploaded["id"]
        self._note_created(file_id)
        # A 200 upload can still have failed to embed: the status says so, the file record says why.
        status = self.http.call("GET", f"/api/v1/files/{file_id}/process/status").json().get("status")
        if status != "completed":
            record = self.http.call("GET", f"/api/v1/files/{file_id}").json() or {}
            error = (record.get("data") or {}).get("error") or f"status {status!r}"
            with self._lock:
                self.ingest.failed[doc_id] = str(error)[:300]
            return
        response = self.http.call(
            "POST", f"/api/v1/knowledge/{self.kb_id}/file/add", ok=(200, 400), json={"file_id": file_id}
        )
        if response.status_code == 400:
            with self._lock:
                self.ingest.failed[doc_id] = f"knowledge base refused the file: {detail_of(response)[:200]}"
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
            wanted.update({
                "RAG_RERANKING_ENGINE": "external",
                "RAG_RERANKING_MODEL": self.reranker_model,
                "RAG_EXTERNAL_RERANKER_URL": self.reranker_url,
                "RAG_EXTERNAL_RERANKER_TIMEOUT": self.reranker_timeout,
            })
        self.saved_settings = {k: self.retrieval_config.get(k) for k in SETTINGS if k in self.retrieval_config}
        self.applied_settings = wanted
        self.http.call("POST", "/api/v1/retrieval/config/update", json=wanted)
        # The server can quietly switch hybrid search off when the reranker fails to load: check.
        self.retrieval_config = self.http.call("GET", "/api/v1/retrieval/config").json()
        ignored = {k: self.retrieval_config.get(k) for k, v in wanted.items() if self.retrieval_config.get(k) != v}
        if ignored:
            raise self.http.error(f"retrieval settings not taken (reranker failed to load?): now {mask_data(ignored)}")

    # -- search -----------------------------------------------------------------------------------

    def _query(self, query: str, k: int) -> dict[str, Any] | None:
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
            detail = detail_of(response)
            if self.variant == "rerank" and "Error querying knowledge base" in detail:
                raise self.http.error(f"reranker-error: HTTP 400 on {path}: {detail} (reranker failing?)")
            raise self.http.error(f"HTTP 400 on {path}: {detail[:300]}")
        return response.json()

    def _rank(self, query: str, depth: int) -> tuple[list[Hit], list[str], list[str]]:
        assert self.corpus is not None
        cap = self.max_chunks or 16 * depth
        k = min(2 * depth, cap)
        while True:
            result = self._query(query, k)
            if result is None:  # /query/doc answers `null` for a collection it does not have
                raise self.http.error(f"knowledge base {self.kb_id} has no vector collection")
            distances = (result.get("distances") or [[]])[0]
            metadatas = (result.get("metadatas") or [[]])[0]
            chunks = (result.get("documents") or [[]])[0]  # the chunk texts, which answer measures score
            warnings = []
            if len(metadatas) > k:
                warnings.append("more-results-than-asked")
            if any(d is None for d in distances):
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
                texts = [self.corpus.chunk_text(doc_id, str(text or ""))
                         for doc_id, text in zip(chunk_docs, chunks, strict=False)]
                return hits, warnings, texts
            k = min(2 * k, cap)


def build_openwebui(spec: TargetSpec, options: TargetOptions) -> OpenWebUITarget:
    return OpenWebUITarget(spec, options)

