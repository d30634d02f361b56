"""LightRAG server as a retrieval target: insert the corpus as texts, rank with `/query/data`.

Spec: `lightrag[:naive|local|global|hybrid|mix]@URL?top_k=N&chunk_top_k=N&rerank=on|off
       &meter=URL&cleanup=true&batch=N&timeout=S`
Key: `LIGHTRAG_API_KEY` (sent as `X-API-Key`; unset for a server without a key).

- Ingest: each distinct corpus text is inserted with `file_source` = a basename-safe, unique form of
  its doc id (`<id>.txt`); documents already on the server under that name are not inserted again.
  ragbench waits until every inserted document is processed or failed (failed ones are listed with
  LightRAG's error) and reports ingestion time.
- Search: `/query/data` in the variant's mode, `chunk_top_k` = depth unless given, `enable_rerank`
  from `rerank=` (default off, so `?rerank=on` is the rerank variant); returned chunks map to
  documents through `file_path`, first rank wins. LightRAG gives no scores. "No results"
  (HTTP 200, status failure) is an empty ranking, not an error.
- Cost: with `meter=URL` (a running `ragbench meter` between LightRAG and its providers) queries run
  one at a time and each result's `cost` holds the LLM and embedding calls, tokens and seconds it spent.
- Answers: each query's returned chunk texts (title removed) are its `passages`, which answer measures
  score; `quality --generate native` asks `/query` in the same mode for LightRAG's own answer.
- `cleanup=true` deletes, in `close()`, the documents this run inserted — and nothing else.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from bench.datasets.model import Dataset
from bench.errors import UserError
from bench.meter import MeterClient, cost
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
from bench.targets.params import bool_param, check_params, int_param
from bench.targets.registry import TargetOptions

KEY_ENV = "LIGHTRAG_API_KEY"
DEFAULT_URL = "http://localhost:9621"
MODES = ("naive", "local", "global", "hybrid", "mix")
PARAMS = {"top_k", "chunk_top_k", "rerank", "meter", "cleanup", "batch", "timeout", "concurrency"}
MAX_BODY_BYTES = 900_000  # LightRAG refuses bodies over 1 MiB; leave room for JSON escaping
POLL_S = 1.0
REFERENCES = re.compile(r"^#+\s*References\s*$", re.MULTILINE)  # the heading LightRAG's answer prompt asks for


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


class LightRAGTarget:
    def __init__(self, spec: TargetSpec, options: TargetOptions):
        check_params(spec.params, PARAMS, spec.text)
        self.name = spec.name
        self.mode = spec.variant or "mix"
        if self.mode not in MODES:
            raise UserError(f"target {spec.text!r}: mode {self.mode!r} unknown (known: {', '.join(MODES)})")
        if spec.rerank:
            raise UserError(f"target {spec.text!r}: LightRAG reranks on the server; write '?rerank=on', not '+rerank'")
        params = spec.params
        self.top_k = int_param(params, "top_k", 40, spec.text)
        self.chunk_top_k = int_param(params, "chunk_top_k", 0, spec.text, minimum=0)  # 0: the search depth
        self.rerank = bool_param(params, "rerank", False, spec.text)
        self.cleanup = bool_param(params, "cleanup", False, spec.text)
        self.batch = int_param(params, "batch", 50, spec.text)
        self.timeout_s = int_param(params, "timeout", 3600, spec.text)
        self.concurrency = int_param(params, "concurrency", 1, spec.text)  # 1: unloaded latency
        self.meter = MeterClient(params["meter"]) if params.get("meter") else None
        key = api_key(KEY_ENV)
        self.created: list[str] = []
        self.http = HTTPClient(
            "LightRAG", spec.url or DEFAULT_URL, {"X-API-Key": key} if key else {}, self.created, KEY_ENV
        )
        self.health: dict[str, Any] = {}
        self.corpus: DedupedCorpus | None = None
        self.source_to_doc: dict[str, str] = {}  # file_source -> representative doc id
        self.inserted_ids: list[str] = []  # LightRAG doc ids this run inserted (what cleanup deletes)
        self.ingest = LightRAGIngest()
        self.deleted = 0
        self._closed = False

    # -- protocol ---------------------------------------------------------------------------------

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self.health = self.http.call("GET", "/health").json()
        # /health answers without a key too; this call proves the key works.
        self.http.call("GET", "/documents/status_counts")
        if self.rerank and not (self.health.get("configuration") or {}).get("enable_rerank"):
            raise self.http.error("rerank=on but the server has no reranker configured (RERANK_BINDING)")
        self.corpus = DedupedCorpus.of(dataset.corpus)
        self.source_to_doc = {file_name(doc_id): doc_id for doc_id in self.corpus.documents}
        before = self.meter.snapshot() if self.meter else None
        start = time.perf_counter()
        try:
            self._insert_and_wait(progress)
        finally:
            self.ingest.seconds = time.perf_counter() - start
            if self.meter and before is not None:
                self.ingest.cost = cost(before, self.meter.snapshot())
        if self.ingest.inserted and self.ingest.processed == 0:
            first = next(iter(self.ingest.failed.items()), ("", "no document processed"))
            raise self.http.error(f"no inserted document was processed; first failure: {first[0]}: {first[1]}")

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.corpus is None:
            raise UserError(f"{self.name}: search() before prepare()")
        advance = progress(f"{self.name}: querying", len(queries))
        items = list(queries.items())
        if self.meter:  # one at a time, so that the meter's difference is this query's cost alone
            results = []
            for qid, text in items:
                before = self.meter.snapshot()
                result = timed_query(qid, lambda text=text: self._rank(text, depth))
                result.cost = cost(before, self.meter.snapshot())
                results.append(result)
                advance(1)
            return results
        return parallel(items, lambda item: timed_query(item[0], lambda: self._rank(item[1], depth)),
                        self.concurrency, advance)

    def generate(self, query: str, options: dict[str, str]) -> tuple[str, dict[str, float]]:
        """LightRAG's own answer (`quality --generate native`): `/query` in this target's mode, `options`
        (response_type, user_prompt) passed through. The references section LightRAG's prompt asks the LLM
        to append is cut off: it cites, it does not answer. The LLM cost needs `meter=`."""
        body: dict[str, Any] = {"query": query, "mode": self.mode, "top_k": self.top_k, "enable_rerank": self.rerank,
                                "include_references": False, **options}
        if self.chunk_top_k:
            body["chunk_top_k"] = self.chunk_top_k
        before = self.meter.snapshot() if self.meter else None
        answer = self.http.call("POST", "/query", json=body).json()
        text = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise self.http.error(f"/query answered without a text 'response': {str(answer)[:200]}")
        spent = cost(before, self.meter.snapshot()) if self.meter and before is not None else {}
        return REFERENCES.split(text, maxsplit=1)[0].strip(), {f"answer_{k}": v for k, v in spent.items()}

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "lightrag",
            "mode": self.mode,
            "url": self.http.base_url,
            "server_version": {k: self.health.get(k) for k in ("core_version", "api_version")},
            "health": mask_data(self.health),
            "query": {"endpoint": "/query/data", "top_k": self.top_k, "chunk_top_k": self.chunk_top_k or "depth",
                      "enable_rerank": self.rerank},
            "mapping": "chunk file_path -> document, first rank wins; LightRAG returns no scores",
            "metered": self.meter.url if self.meter else None,
            "ingest": self.ingest.as_dict(),
            "corpus": self.corpus.describe() if self.corpus else None,
            "cleanup": {"requested": self.cleanup, "deleted": self.deleted},
        }

    def close(self) -> None:
        """With cleanup=true, delete exactly the documents this run inserted. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.cleanup and self.inserted_ids:
                self._delete(self.inserted_ids)
        finally:
            self.http.close()
            if self.meter:
                self.meter.close()

    # -- ingest -----------------------------------------------------------------------------------

    def _documents_on_server(self) -> dict[str, dict[str, Any]]:
        """file_path -> status record of every document on the server."""
        found: dict[str, dict[str, Any]] = {}
        page = 1
        while True:
            body = self.http.call(
                "POST", "/documents/paginated", json={"page": page, "page_size": 200, "sort_field": "id", "sort_direction": "asc"}
            ).json()
            for doc in body.get("documents", []):
                found[doc.get("file_path")] = doc
            pagination = body.get("pagination") or {}
            if not body.get("documents") or not pagination.get("has_next"):
                return found
            page += 1

    def _insert_and_wait(self, progress: ProgressFactory) -> None:
        assert self.corpus is not None
        on_server = self._documents_on_server()
        todo: list[tuple[str, str]] = []  # (file_source, text)
        unfinished = []
        for source, doc_id in self.source_to_doc.items():
            existing = on_server.get(source)
            status = str((existing or {}).get("status", "")).lower()
            if existing is None:
                todo.append((source, self.corpus.documents[doc_id].full_text))
            elif status == "failed":
                self.ingest.failed[source] = f"(already on the server, failed) {existing.get('error_msg')}"
            elif status == "processed":
                self.ingest.already_present += 1
            else:
                unfinished.append(source)
        if unfinished:  # an earlier run's documents, not ours to wait for or clean up
            raise self.http.error(
                f"{len(unfinished)} corpus documents are still {on_server[unfinished[0]].get('status')} on the server "
                f"(e.g. {unfinished[0]}); let LightRAG's pipeline finish, then run again"
            )
        advance = progress(f"{self.name}: inserting and processing", len(todo))
        track_ids = [self._insert(batch) for batch in self._batches(todo)]
        self._wait(track_ids, len(todo), advance)

    def _batches(self, todo: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
        batches: list[list[tuple[str, str]]] = []
        current: list[tuple[str, str]] = []
        size = 0
        for source, text in todo:
            item_size = len(text.encode("utf-8")) + len(source) + 16
            if current and (len(current) >= self.batch or size + item_size > MAX_BODY_BYTES):
                batches.append(current)
                current, size = [], 0
            current.append((source, text))
            size += item_size
        if current:
            batches.append(current)
        return batches

    def _insert(self, batch: list[tuple[str, str]]) -> str:
        response = self.http.call(
            "POST", "/documents/texts",
            json={"texts": [text for _, text in batch], "file_sources": [source for source, _ in batch]},
        )
        track_id = response.json().get("track_id")
        if not track_id:
            raise self.http.error(f"insert answered without a track_id: {detail_of(response)[:200]}")
        self.ingest.inserted += len(batch)
        self._note_created()
        return track_id

    def _wait(self, track_ids: list[str], expected: int, advance: Any) -> None:
        """Poll every track until each of its documents is processed or failed."""
        deadline = time.monotonic() + self.timeout_s
        pending = set(track_ids)
        done: dict[str, str] = {}  # LightRAG doc id -> final status
        while pending:
            for track_id in sorted(pending):
                body = self.http.call("GET", f"/documents/track_status/{track_id}").json()
                documents = body.get("documents", [])
                for doc in documents:
                    status = str(doc.get("status", "")).lower()
                    if doc["id"] not in self.inserted_ids:
                        self.inserted_ids.append(doc["id"])
                    if status in ("processed", "failed") and doc["id"] not in done:
                        done[doc["id"]] = status
                        advance(1)
                        if status == "processed":
                            self.ingest.processed += 1
                        else:
                            self.ingest.failed[doc.get("file_path", doc["id"])] = str(doc.get("error_msg"))
                if documents and all(str(d.get("status", "")).lower() in ("processed", "failed") for d in documents):
                    pending.discard(track_id)
            if not pending:
                break
            if time.monotonic() > deadline:
                raise self.http.error(
                    f"{expected - len(done)} of {expected} documents not processed within {self.timeout_s} s"
                )
            time.sleep(POLL_S)

    def _note_created(self) -> None:
        summary = f"{self.ingest.inserted} document(s) inserted into LightRAG (file_source <doc id>.txt)"
        if self.created:
            self.created[0] = summary
        else:
            self.created.append(summary)

    def _delete(self, doc_ids: list[str]) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:  # deletes answer "busy" while the pipeline works; wait for it
            body = self.http.call(
                "DELETE", "/documents/delete_document",
                json={"doc_ids": doc_ids, "delete_file": False, "delete_llm_cache": True},
            ).json()
            if body.get("status") == "deletion_started":
                break
            if time.monotonic() > deadline:
                raise self.http.error(f"delete refused until the deadline: {body.get('message')}")
            time.sleep(POLL_S)
        while self.http.call("GET", "/documents/pipeline_status").json().get("busy"):
            if time.monotonic() > deadline:
                raise self.http.error("deletion still running at the deadline")
            time.sleep(POLL_S)
        self.deleted = len(doc_ids)
        self.created.clear()

    # -- search -----------------------------------------------------------------------------------

    def _rank(self, query: str, depth: int) -> tuple[list[Hit], list[str], list[str]]:
        assert self.corpus is not None
        body = {
            "query": query,
            "mode": self.mode,
            "top_k": self.top_k,
            "chunk_top_k": self.chunk_top_k or depth,
            "enable_rerank": self.rerank,
        }
        answer = self.http.call("POST", "/query/data", json=body).json()
        if answer.get("status") != "success":
            return [], [], []  # LightRAG's "no results": HTTP 200, status failure
        pairs: list[tuple[str, float | None]] = []
        unmapped = 0
        chunks = (answer.get("data") or {}).get("chunks", [])
        for chunk in chunks:
            doc_id = self.source_to_doc.get(chunk.get("file_path", ""))
            if doc_id is None:
                unmapped += 1
            else:
                pairs.append((doc_id, None))
        # What answer measures score: every returned chunk's text, mapped or not, without the ingested title.
        passages = [self.corpus.chunk_text(self.source_to_doc.get(chunk.get("file_path", "")), str(chunk.get("content") or ""))
                    for chunk in chunks]
        return first_rank_wins(self.corpus.expand(pairs), depth), (["unmapped-chunks"] if unmapped else []), passages


def build_lightrag(spec: TargetSpec, options: TargetOptions) -> LightRAGTarget:
    return LightRAGTarget(spec, options)

