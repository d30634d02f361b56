"""Open WebUI as a retrieval target: a knowledge base that ragbench fills, queried through the
retrieval API, with the search mode set through the server's retrieval settings.

Spec: `openwebui[:vector|hybrid|rerank]@URL?kb=NAME&endpoint=doc|collection&bm25_weight=W
       &reranker_url=URL&reranker_model=NAME&concurrency=N&max_chunks=N&meter=URL&meter_nest=OUTER>INNER
       &store=NAME` (the app's vector store, part of the target's identity: bench/targets/openwebui_store.py)
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
- Time by hop: with `meter=URL` (a running `ragbench meter` that Open WebUI's embedding and reranker URLs
  point at) queries run one at a time; each one's cost holds the embedding and rerank calls it made and its
  latency splits into `<route>_ms` per metered hop and `app_ms`, Open WebUI's own share (bench/targets/hops.py).
- Variants are applied with `/api/v1/retrieval/config/update`; the fields changed are saved first (and
  journalled, bench/targets/settings_journal.py: a killed run's are put back by the next run against the server
  before it reads its own), stored in `describe()` (keys masked) and written back in `close()`. The rerank
  variant sets the reranker's key from `RAG_EXTERNAL_RERANKER_API_KEY`; when that is unset, the server's own
  reranker key is kept for the server's own reranker URL and emptied for any other (it is never sent elsewhere).
"""

from __future__ import annotations

import threading
import time

from bench.core.errors import ServerError, UserError
from bench.core.http import HttpClient, Reply, auth_headers, error_message, key_from_env
from bench.core.progress import ProgressFactory, console
from bench.core.secrets import mask_data
from bench.datasets.model import Dataset
from bench.results.schema.ingest import Settings
from bench.targets.app_descriptions import OpenWebUIDescription, OpenWebUIQueryBody
from bench.targets.base import Hit, QueryResult, TargetKind, TargetOptions, TargetSpec, first_rank_wins
from bench.targets.hops import MeteredQueries
from bench.targets.http_shared import DedupedCorpus, file_name, parallel, run_queries, timed_query
from bench.targets.openwebui_chunks import chunk_documents, read_chunks
from bench.targets.openwebui_knowledge import (
    IngestReport,
    ProcessStatus,
    StoredFile,
    content_hash,
    existing_files,
    knowledge_base,
    process_status,
    upload_to_knowledge,
)
from bench.targets.openwebui_settings import SETTINGS, ExternalReranker, Variant, send_settings, variant_settings
from bench.targets.openwebui_spec import OpenWebUISettings, QueryRoute, openwebui_settings
from bench.targets.openwebui_store import StoreIdentity
from bench.targets.settings_journal import SettingsJournal, as_settings, journal_for

KEY_ENV = "OPENWEBUI_API_KEY"
RERANKER_KEY_ENV = "RAG_EXTERNAL_RERANKER_API_KEY"
DEFAULT_URL = "http://localhost:8080"


class OpenWebUITarget:
    def __init__(self, spec: TargetSpec, options: TargetOptions):
        given = spec.settings if isinstance(spec.settings, OpenWebUISettings) else openwebui_settings(spec)
        self.name = spec.name
        self.spec = spec
        self.variant, self.endpoint, self.kb_name = given.variant, given.endpoint, given.kb_name
        self.bm25_weight, self.reranker_url, self.reranker_model = (
            given.bm25_weight,
            given.reranker_url,
            given.reranker_model,
        )
        self.reranker_timeout, self.max_chunks = given.reranker_timeout, given.max_chunks
        self.concurrency, self.query_concurrency = given.concurrency, given.query_concurrency
        self.meter = MeteredQueries(given.meter, given.nesting, spec.public_text) if given.meter else None
        self.store = StoreIdentity(given.store)
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
            f"Open WebUI at {url}",
            url,
            headers,
            timeout_s=300.0,
            created=self.created,
            key_env=KEY_ENV,
            transport=options.transport,
        )
        self.kb_id: str | None = None
        self.version: str | None = None
        self.saved_settings: Settings | None = None  # the server's values (SETTINGS) before ragbench changed them
        self.applied_settings: Settings = {}
        self.retrieval_config: dict[str, object] = {}
        self.embedding_config: dict[str, object] = {}
        self.ingest = IngestReport()
        self.corpus: DedupedCorpus | None = None
        self.file_to_doc: dict[str, str] = {}  # Open WebUI file id -> representative doc id
        self.uploaded_ids: list[str] = []
        self._files_entry: int | None = None
        self._restored = False
        self._journal: SettingsJournal | None = None  # opened at the first prepare
        self._lock = threading.Lock()

    # -- protocol ---------------------------------------------------------------------------------

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        if self.meter:  # a meter_nest typo is refused before anything is uploaded or measured
            self.meter.check()
        self.version = self.http.json("GET", "/api/version").get("version", kind=str, default=None)
        self._open_journal()  # a killed run's settings back before this run reads the ones it will put back
        self.retrieval_config = self.http.json("GET", "/api/v1/retrieval/config").get(kind=dict)
        self.embedding_config = self.http.json("GET", "/api/v1/retrieval/embedding").get(kind=dict)
        self.store = self.store.reported(self.retrieval_config, self.http.error)
        self.corpus = DedupedCorpus.of(dataset.corpus)
        self.kb_name = self.kb_name or f"ragbench-{dataset.name}-{dataset.fingerprint()}"
        self.kb_id = knowledge_base(self.http, self.kb_name, self.created)
        self._ingest(progress)
        self._apply_variant()

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.kb_id is None:
            raise UserError(f"{self.name}: search() before prepare()")
        advance = progress(f"{self.name}: querying", len(queries))
        if self.meter:  # one at a time, so that the meter's difference is this query's calls alone
            meter = self.meter
            return run_queries(
                queries,
                lambda qid, text: meter.run(lambda: timed_query(qid, lambda: self._rank(text, depth))),
                1,
                advance,
            )
        return run_queries(
            queries,
            lambda qid, text: timed_query(qid, lambda: self._rank(text, depth)),
            self.query_concurrency,
            advance,
        )

    def describe(self) -> OpenWebUIDescription:
        return {
            "kind": TargetKind.OPENWEBUI,
            "variant": self.variant,
            "url": self.http.base_url,
            "server_version": self.version,
            "store": self.store.describe(),
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
            "metered": self.meter.describe() if self.meter else None,
        }

    def close(self) -> None:
        """Write the saved retrieval settings back; safe to call twice and after any failure. Where they cannot go
        back, the journal keeps them for the next run against the server."""
        restored = True
        try:
            if self.saved_settings is not None and not self._restored:
                try:
                    self.http.call("POST", "/api/v1/retrieval/config/update", json=self.saved_settings)
                except ServerError as exc:
                    restored = False
                    raise self.http.error(
                        f"retrieval settings NOT restored, set them back by hand to {mask_data(self.saved_settings)} "
                        f"({exc.args[0].split(': ', 1)[-1]})"
                    ) from None
                self._restored = True
        finally:
            if self._journal is not None:
                self._journal.close(restored)
                self._journal = None
            self.http.close()
            if self.meter:
                self.meter.close()

    def _open_journal(self) -> None:
        """The server's settings journal, once: what a killed run left is put back first, and said."""
        if self._journal is not None:
            return
        journal = journal_for("openwebui", self.http.base_url)
        left = journal.open(lambda values: send_settings(self.http, values))
        self._journal = journal
        if left:
            said = f"{self.name}: restored the settings an interrupted run left on {self.http.base_url}: "
            console.print(
                said + ", ".join(f"{k}={v}" for k, v in mask_data(left).items()),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    # -- ingest -----------------------------------------------------------------------------------

    def _ingest(self, progress: ProgressFactory) -> None:
        said = len(self.ingest.skipped_empty)  # those an earlier prepare (grow's earlier rung) already said
        todo, stale = self._sort_corpus(existing_files(self.http, self.kb_id))
        if stale:
            doc_id, why = next(iter(stale.items()))
            raise self.http.error(
                f"knowledge base '{self.kb_name}' already holds {len(stale)} file(s) named like corpus documents that "
                f"cannot be reused (first: {file_name(doc_id)}: {why}); their chunks would be ranked as this corpus: "
                "remove them or choose another kb=NAME"
            )
        self._say_skipped(self.ingest.skipped_empty[said:])
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

    def _sort_corpus(self, existing: dict[str, StoredFile]) -> tuple[list[str], dict[str, str]]:
        """The documents to upload, and those whose file in the knowledge base cannot be reused (doc id -> why);
        each file reused is noted in `file_to_doc`."""
        assert self.corpus is not None
        todo, stale = [], {}
        noted_empty = set(self.ingest.skipped_empty)  # each empty document noted once, however many prepares
        candidates: dict[str, StoredFile] = {}  # doc id -> a file of its name whose bytes match, status unknown
        for doc_id, doc in self.corpus.documents.items():
            stored = existing.get(file_name(doc_id))
            if not doc.full_text.strip():  # refused by the server (HTTP 400): never uploaded, said below
                if doc_id not in noted_empty:
                    self.ingest.skipped_empty.append(doc_id)
            elif stored is None:
                todo.append(doc_id)
            elif stored.file_hash != content_hash(doc.full_text):
                stale[doc_id] = "its content differs from the corpus text"
            elif stored.vectors_hash is None:  # set only once the file's vectors were stored
                stale[doc_id] = "its processing never completed"
            elif self.file_to_doc.get(stored.file_id) == doc_id:
                # This target uploaded or checked this very file (same id, bytes and vectors as listed): its status
                # was read then, so grow's next rung asks nothing per file the base already held.
                self.ingest.already_present += 1
            else:
                candidates[doc_id] = stored
        self._check_status(candidates, stale)
        return todo, stale

    def _check_status(self, candidates: dict[str, StoredFile], stale: dict[str, str]) -> None:
        """Each file found in the base and not checked by this target before: reused when its processing
        completed, else noted in `stale`."""
        statuses = parallel(
            [stored.file_id for stored in candidates.values()],
            lambda file_id: process_status(self.http, file_id),
            self.concurrency,
            lambda n: None,
        )
        for (doc_id, stored), status in zip(candidates.items(), statuses):
            if status == ProcessStatus.COMPLETED:
                self.file_to_doc[stored.file_id] = doc_id
                self.ingest.already_present += 1
            else:
                stale[doc_id] = f"its processing status is {status!r}"

    def _say_skipped(self, skipped: list[str]) -> None:
        """This prepare's new empty documents (grow prepares once per batch, each corpus the last one and more)."""
        if skipped:
            console.print(
                f"{self.name}: {len(skipped)} empty document(s) not uploaded (Open WebUI refuses empty content), so "
                f"never retrieved: {', '.join(skipped[:5])}{' …' if len(skipped) > 5 else ''}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    def _upload(self, doc_id: str) -> None:
        assert self.corpus is not None and self.kb_id is not None
        text = self.corpus.documents[doc_id].full_text
        file_id, error = upload_to_knowledge(self.http, self.kb_id, file_name(doc_id), text, doc_id, self._note_created)
        with self._lock:
            if error is not None:
                self.ingest.failed[doc_id] = error
                return
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
        try:
            current = as_settings({k: self.retrieval_config[k] for k in SETTINGS if k in self.retrieval_config})
        except ValueError:
            raise self.http.error(f"retrieval settings {', '.join(SETTINGS)}: not all scalars") from None
        reranker = ExternalReranker(self.reranker_url, self.reranker_model, self.reranker_timeout, self.reranker_key)
        wanted = variant_settings(self.variant, self.bm25_weight, reranker, current)
        if self.saved_settings is None:  # a second prepare (grow's next rung) must not save the applied settings
            self.saved_settings = current
        self.applied_settings = wanted
        if all(self.retrieval_config.get(k) == v for k, v in wanted.items()):
            return  # already in place (grow's next rung, read at this prepare's start): nothing to write or reload
        if self._journal is not None:
            self._journal.save(self.saved_settings)
        self.http.call("POST", "/api/v1/retrieval/config/update", json=wanted)
        # The server can quietly switch hybrid search off when the reranker fails to load: check.
        self.retrieval_config = self.http.json("GET", "/api/v1/retrieval/config").get(kind=dict)
        ignored = {k: self.retrieval_config.get(k) for k, v in wanted.items() if self.retrieval_config.get(k) != v}
        if ignored:
            raise self.http.error(f"retrieval settings not taken (reranker failed to load?): now {mask_data(ignored)}")

    # -- search -----------------------------------------------------------------------------------

    def _query(self, query: str, k: int) -> Reply:
        body: OpenWebUIQueryBody = {"query": query, "k": k}
        if self.variant != Variant.VECTOR:
            body.update({"k_reranker": k, "hybrid_bm25_weight": self.bm25_weight})
        if self.endpoint == QueryRoute.DOC:
            body["collection_name"] = self.kb_id
        else:
            body["collection_names"] = [self.kb_id]
        path = f"/api/v1/retrieval/query/{self.endpoint}"
        response = self.http.call("POST", path, ok=(200, 400), json=body)
        if response.status_code == 400:
            detail = error_message(response)[0]
            if self.variant == Variant.RERANK and "Error querying knowledge base" in detail:
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
            distances, metadatas, chunks = read_chunks(reply)
            warnings = []
            if len(metadatas) > k:
                warnings.append("more-results-than-asked")
            if any(d is None for d in distances):
                if self.variant == Variant.RERANK:
                    # Open WebUI's silent fallback: its reranker failed and it answered the fused candidates
                    # unscored. A failed part fails its query (bench/targets/base.py), never the other part alone.
                    raise self.http.error(
                        f"reranker-error: {len(metadatas)} results with null scores from /query/{self.endpoint} "
                        "(Open WebUI's unreranked fallback when its reranker fails)"
                    )
                warnings.append("null-scores")
            chunk_docs = chunk_documents(metadatas, self.file_to_doc)
            pairs = [
                (doc_id, score) for doc_id, score in zip(chunk_docs, distances, strict=False) if doc_id is not None
            ]
            if None in chunk_docs:
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
