"""LightRAG server as a retrieval target: insert the corpus as texts, rank with `/query/data`.

Spec: `lightrag[:naive|local|global|hybrid|mix]@URL?top_k=N&chunk_top_k=N&max_chunks=N&rerank=on|off
       &meter=URL&meter_nest=OUTER>INNER&cleanup=true&batch=N&timeout=S`
Key: `LIGHTRAG_API_KEY` (sent as `X-API-Key`; unset for a server without a key).

- Ingest: each distinct corpus text is inserted with `file_source` = a basename-safe, unique form of
  its doc id (`<id>.txt`); documents already on the server under that name are not inserted again.
  ragbench waits until every inserted document is processed or failed (failed ones are listed with
  LightRAG's error) and reports ingestion time.
- Search: `/query/data` in the variant's mode, `enable_rerank` from `rerank=` (default off, so
  `?rerank=on` is the rerank variant); returned chunks map to documents through `file_path`, first
  rank wins. LightRAG gives no scores. A document can span several chunks, so ragbench asks for
  `chunk_top_k` = 2×depth chunks (or the given `chunk_top_k`) and doubles while the ranking is short of
  depth and the server had more, up to `max_chunks` (default 16×depth). "No results" (HTTP 200,
  status failure, `failure_reason: no_results`) is an empty ranking; any other failure is the query's error.
- Cost: with `meter=URL` (a running `ragbench meter` between LightRAG and its providers) queries run
  one at a time and each result's `cost` holds the LLM and embedding calls, tokens and seconds it spent,
  and its latency is split by hop (`llm_ms`, `embedding_ms`, `rerank_ms`, `app_ms`: bench/targets/hops.py).
  LightRAG's LLM response cache (ENABLE_LLM_CACHE, on by default, not switchable per request) answers
  a repeated query's keyword extraction without an LLM call: the server's setting is recorded, and a
  graph-mode query that cost no LLM call while it is on carries the warning `llm-cost-from-cache`.
- Answers: each query's returned chunk texts (title removed) are its `passages`, which answer measures
  score; `quality --generate native` asks `/query` in the same mode for LightRAG's own answer.
- `cleanup=true` deletes, in `close()`, the documents this run inserted — and nothing else — and
  waits until the server lists none of them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from bench.core.errors import UserError
from bench.core.http import HttpClient, Reply, auth_headers, error_message, key_from_env
from bench.core.progress import ProgressFactory
from bench.core.secrets import mask_data
from bench.datasets.model import Dataset
from bench.endpoints.meter import cost
from bench.targets.app_descriptions import LightRAGDescription, LightRAGQueryBody, Mode
from bench.targets.base import Hit, QueryResult, TargetKind, TargetOptions, TargetSpec, first_rank_wins
from bench.targets.hops import MeteredQueries, Nesting
from bench.targets.http_shared import DedupedCorpus, file_name, run_queries, timed_query
from bench.targets.lightrag_documents import (
    DocStatus,
    LightRAGIngest,
    TrackWatch,
    corpus_on_server,
    delete_documents,
    insert_batches,
    insert_texts,
)
from bench.targets.params import SpecShape, bool_param, int_param

KEY_ENV = "LIGHTRAG_API_KEY"
DEFAULT_URL = "http://localhost:9621"


class QueryStatus(StrEnum):
    """`/query/data`'s answer status on LightRAG's wire; a failure carries its reason (`no_results`: nothing found)."""

    SUCCESS = "success"
    FAILURE = "failure"


PARAMS = {
    "top_k",
    "chunk_top_k",
    "max_chunks",
    "rerank",
    "meter",
    "meter_nest",
    "cleanup",
    "batch",
    "timeout",
    "concurrency",
}
SHAPE = SpecShape(PARAMS, Mode, Mode.MIX, "mode", "LightRAG reranks on the server; write '?rerank=on', not '+rerank'")
CACHE_WARNING = "llm-cost-from-cache"
NO_RESULTS = "no_results"  # the failure reason of a query that found nothing
REFERENCES = re.compile(r"^#+\s*References\s*$", re.MULTILINE)  # the heading LightRAG's answer prompt asks for


@dataclass(frozen=True)
class LightRAGSettings:
    """A LightRAG spec's mode and parameters, typed and checked when the spec is parsed (`parse_target_spec`)."""

    mode: Mode
    top_k: int
    chunk_top_k: int  # 0: 2 × depth
    max_chunks: int  # 0: 16 × depth
    rerank: bool
    cleanup: bool
    batch: int
    timeout_s: int
    concurrency: int  # 1: unloaded latency
    meter: str | None
    nesting: Nesting


@dataclass(frozen=True)
class ServerConfiguration:
    """What ragbench reads of the `configuration` block of LightRAG's /health answer."""

    rerank: bool  # enable_rerank: a reranker is configured (RERANK_BINDING)
    llm_cache: bool | None  # enable_llm_cache (ENABLE_LLM_CACHE); None: not reported
    hosts: dict[str, str]  # each provider's binding host it reports: "llm_binding_host" -> URL
    max_parallel_insert: int  # 0: not reported
    workspace: str | None  # None: the default workspace, or not reported

    @classmethod
    def of(cls, health: Reply) -> ServerConfiguration:
        """The configuration in a /health reply (none reported: an empty one)."""
        block = health.get("configuration", kind=dict, default={})
        cache, insert, workspace = (
            block.get("enable_llm_cache"),
            block.get("max_parallel_insert"),
            block.get("workspace"),
        )
        return cls(
            rerank=bool(block.get("enable_rerank")),
            llm_cache=cache if isinstance(cache, bool) else None,
            hosts={k: v for k, v in block.items() if k.endswith("_binding_host") and isinstance(v, str) and v},
            max_parallel_insert=insert if isinstance(insert, int) else 0,
            workspace=workspace if isinstance(workspace, str) and workspace else None,
        )


def lightrag_settings(spec: TargetSpec) -> LightRAGSettings:
    """The spec's settings, or one UserError naming the spec (nothing is sent)."""
    mode = SHAPE.variant(spec)
    params = spec.params
    return LightRAGSettings(
        mode=mode,
        top_k=int_param(params, "top_k", 40, spec.text),
        chunk_top_k=int_param(params, "chunk_top_k", 0, spec.text, minimum=0),
        max_chunks=int_param(params, "max_chunks", 0, spec.text, minimum=0),
        rerank=bool_param(params, "rerank", False, spec.text),
        cleanup=bool_param(params, "cleanup", False, spec.text),
        batch=int_param(params, "batch", 50, spec.text),
        timeout_s=int_param(params, "timeout", 3600, spec.text),
        concurrency=int_param(params, "concurrency", 1, spec.text),
        meter=params.get("meter") or None,
        nesting=Nesting.parse(params.get("meter_nest"), spec.text),
    )


class LightRAGTarget:
    def __init__(self, spec: TargetSpec, options: TargetOptions):
        given = spec.settings if isinstance(spec.settings, LightRAGSettings) else lightrag_settings(spec)
        self.spec = spec
        self.name = spec.name
        self.mode, self.top_k, self.chunk_top_k, self.max_chunks = (
            given.mode,
            given.top_k,
            given.chunk_top_k,
            given.max_chunks,
        )
        self.rerank, self.cleanup, self.batch = given.rerank, given.cleanup, given.batch
        self.timeout_s, self.concurrency = given.timeout_s, given.concurrency
        self.meter = MeteredQueries(given.meter, given.nesting, spec.public_text) if given.meter else None
        key = key_from_env(f"target {spec.public_text!r}", KEY_ENV, required=False)
        self.created: list[str] = []
        url, headers = auth_headers(
            f"target {spec.public_text!r}", spec.url or DEFAULT_URL, key, key_header="X-API-Key"
        )
        self.http = HttpClient(
            f"LightRAG at {url}",
            url,
            headers,
            timeout_s=300.0,
            created=self.created,
            key_env=KEY_ENV,
            transport=options.transport,
        )
        self.health: dict[str, object] = {}  # /health's JSON as it came, for describe()
        self.configuration = ServerConfiguration(False, None, {}, 0, None)
        self._asks = 0  # /query/data calls of the query in flight (metered runs go one query at a time)
        self.corpus: DedupedCorpus | None = None
        self.source_to_doc: dict[str, str] = {}  # file_source -> representative doc id
        self.inserted_ids: list[str] = []  # LightRAG doc ids this run inserted (what cleanup deletes)
        self.ingest = LightRAGIngest()
        self.deleted = 0
        self._closed = False

    # -- protocol ---------------------------------------------------------------------------------

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        if self.meter:  # a meter_nest typo is refused before anything is uploaded or measured
            self.meter.check()
        health = self.http.json("GET", "/health")
        self.health = health.get(kind=dict)
        # /health answers without a key too; this call proves the key works.
        self.http.call("GET", "/documents/status_counts")
        self.configuration = ServerConfiguration.of(health)
        if self.rerank and not self.configuration.rerank:
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
        if self.meter:  # one at a time, so that the meter's difference is this query's cost alone
            return run_queries(queries, lambda qid, text: self._metered(qid, text, depth), 1, advance)
        return run_queries(
            queries, lambda qid, text: timed_query(qid, lambda: self._rank(text, depth)), self.concurrency, advance
        )

    def _metered(self, qid: str, text: str, depth: int) -> QueryResult:
        assert self.meter is not None
        self._asks = 0
        result = self.meter.run(lambda: timed_query(qid, lambda: self._rank(text, depth)))
        # What one ragbench query cost, re-asks for more chunks included (`lightrag_requests` of them).
        result.cost["lightrag_requests"] = self._asks
        # Graph modes extract keywords with one LLM call per query; none at all means the cache answered.
        if self.mode != Mode.NAIVE and self.llm_cache and not result.error and result.cost.get("llm_calls") == 0:
            result.warnings.append(CACHE_WARNING)
        return result

    @property
    def llm_cache(self) -> bool | None:
        """The server's ENABLE_LLM_CACHE as /health reports it (None: not reported)."""
        return self.configuration.llm_cache

    def generate(self, query: str, options: dict[str, str]) -> tuple[str, dict[str, float]]:
        """LightRAG's own answer (`quality --generate native`): `/query` in this target's mode, `options`
        (response_type, user_prompt) passed through. The references section LightRAG's prompt asks the LLM
        to append is cut off: it cites, it does not answer. The LLM cost needs `meter=`."""
        body: LightRAGQueryBody = {
            "query": query,
            "mode": self.mode,
            "top_k": self.top_k,
            "enable_rerank": self.rerank,
            "include_references": False,
        }
        if "response_type" in options:  # the options quality checked (NATIVE_OPTIONS), passed through
            body["response_type"] = options["response_type"]
        if "user_prompt" in options:
            body["user_prompt"] = options["user_prompt"]
        if self.chunk_top_k:
            body["chunk_top_k"] = self.chunk_top_k
        before = self.meter.snapshot() if self.meter else None
        text = self.http.json("POST", "/query", json=body).get("response", kind=str)
        spent = cost(before, self.meter.snapshot()) if self.meter and before is not None else {}
        return REFERENCES.split(text, maxsplit=1)[0].strip(), {f"answer_{k}": v for k, v in spent.items()}

    def describe(self) -> LightRAGDescription:
        return {
            "kind": TargetKind.LIGHTRAG,
            "mode": self.mode,
            "url": self.http.base_url,
            "server_version": {
                "core_version": self.health.get("core_version"),
                "api_version": self.health.get("api_version"),
            },
            "health": mask_data(self.health),
            "query": {
                "endpoint": "/query/data",
                "top_k": self.top_k,
                "chunk_top_k": self.chunk_top_k or "2 × depth",
                "max_chunks": self.max_chunks or "16 × depth",
                "enable_rerank": self.rerank,
            },
            "mapping": "chunk file_path -> document, first rank wins; chunks doubled while short of depth; "
            "LightRAG returns no scores",
            "metered": self.meter.describe() if self.meter else None,
            "llm_cache": {
                "enabled": self.llm_cache,
                "note": "cost of a graph-mode query answered by LightRAG's LLM cache is flagged "
                f"{CACHE_WARNING}: it is not what an uncached query costs",
            },
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
                delete_documents(self.http, self.inserted_ids, self.timeout_s)
                self.deleted = len(self.inserted_ids)
                self.created.clear()
        finally:
            self.http.close()
            if self.meter:
                self.meter.close()

    # -- ingest -----------------------------------------------------------------------------------

    def _insert_and_wait(self, progress: ProgressFactory) -> None:
        assert self.corpus is not None
        found = corpus_on_server(self.http, list(self.source_to_doc))
        self.ingest.already_present = len(found.processed)
        for source, error in found.failed.items():
            self.ingest.failed[source] = f"(already on the server, failed) {error}"
        todo = [(source, self.corpus.documents[self.source_to_doc[source]].full_text) for source in found.new]
        advance = progress(f"{self.name}: inserting and processing", len(todo))
        watch = TrackWatch(self.http, [self._insert(batch) for batch in insert_batches(todo, self.batch)])
        try:
            watch.wait(len(todo), self.timeout_s, advance)
        finally:  # what cleanup deletes: every document the tracks listed, final or not, over every prepare (grow)
            self.inserted_ids = list(dict.fromkeys([*self.inserted_ids, *watch.seen]))
            for doc in watch.final.values():
                if doc.status == DocStatus.PROCESSED:
                    self.ingest.processed += 1
                else:
                    self.ingest.failed[doc.source] = doc.error

    def _insert(self, batch: list[tuple[str, str]]) -> str:
        track_id = insert_texts(self.http, batch, self.timeout_s)
        self.ingest.inserted += len(batch)
        self._note_created()
        return track_id

    def _note_created(self) -> None:
        summary = f"{self.ingest.inserted} document(s) inserted into LightRAG (file_source <doc id>.txt)"
        if self.created:
            self.created[0] = summary
        else:
            self.created.append(summary)

    # -- search -----------------------------------------------------------------------------------

    def _rank(self, query: str, depth: int) -> tuple[list[Hit], list[str], list[str]]:
        assert self.corpus is not None
        cap = max(self.max_chunks or 16 * depth, self.chunk_top_k)
        k = self.chunk_top_k or min(2 * depth, cap)
        while True:
            chunks, reply = self._chunks(query, k)
            pairs: list[tuple[str, float | None]] = []
            unmapped = 0
            for i in range(len(chunks)):
                doc_id = self.source_to_doc.get(reply.get("data", "chunks", i, "file_path", kind=str, default=""))
                if doc_id is None:
                    unmapped += 1
                else:
                    pairs.append((doc_id, None))
            hits = first_rank_wins(self.corpus.expand(pairs), depth)
            # Short of depth while the server had more chunks: ask for more. Anomalies stop here.
            if len(hits) >= depth or len(chunks) < k or k >= cap or unmapped:
                # What answer measures score: every returned chunk's text, mapped or not, without the ingested title.
                passages = [
                    self.corpus.chunk_text(
                        self.source_to_doc.get(reply.get("data", "chunks", i, "file_path", kind=str, default="")),
                        reply.get("data", "chunks", i, "content", kind=str, default=""),
                    )
                    for i in range(len(chunks))
                ]
                return hits, (["unmapped-chunks"] if unmapped else []), passages
            k = min(2 * k, cap)

    def _chunks(self, query: str, chunk_top_k: int) -> tuple[list[Any], Reply]:
        """The ranked chunks of one /query/data call; "no results" is none, any other failure raises."""
        body = {
            "query": query,
            "mode": self.mode,
            "top_k": self.top_k,
            "chunk_top_k": chunk_top_k,
            "enable_rerank": self.rerank,
        }
        self._asks += 1
        response = self.http.call("POST", "/query/data", ok=(200, 400), json=body)
        reply = self.http.reply(response)
        status = reply.get("status", kind=str)
        if response.status_code == 400 or status != QueryStatus.SUCCESS:
            reason = reply.get("metadata", "failure_reason", kind=str, default="")
            if response.status_code == 200 and status == QueryStatus.FAILURE and reason == NO_RESULTS:
                return [], reply
            raise self.http.error(
                f"POST /query/data failed (HTTP {response.status_code}, status {status!r}"
                f"{f', failure_reason {reason!r}' if reason else ''}): {error_message(response)[0]}"
            )
        return reply.get("data", "chunks", kind=list, default=[]), reply
