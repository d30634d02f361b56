"""Shared pieces of the HTTP targets (Open WebUI, LightRAG): identical-text grouping, file names for
corpus ids, and a bounded thread pool with progress. Requests themselves go through `bench/core/http/`."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TypedDict, TypeVar

from bench.core.errors import ServerError
from bench.core.http import ServerUnreachable
from bench.datasets.model import Document
from bench.targets.base import Hit, QueryResult, TargetFailed

T = TypeVar("T")
R = TypeVar("R")

# Queries in a row that got no HTTP answer at all before a target is ended as failed: one is a blip,
# three in a row is a server that is gone (every further query would only wait for its own timeout).
MAX_UNREACHABLE = 3


def file_name(doc_id: str) -> str:
    """A basename-safe, unique file name for a corpus id: `<id>.txt`, and where the id had characters
    a file name cannot keep, the replaced form plus a hash of the original (so two ids never collide)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", doc_id)
    if safe != doc_id or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha1(doc_id.encode()).hexdigest()[:8]}"
    return f"{safe}.txt"


class CorpusDescription(TypedDict):
    """`config.corpus` of an app target: the texts it holds, and the first groups of identical documents."""

    distinct_texts: int
    identical_copies: int
    identical_groups: dict[str, list[str]]  # representative doc id -> its copies


@dataclass
class DedupedCorpus:
    """One representative per distinct text; a hit on it stands for every document with that text.

    Engines refuse or silently drop identical content (Open WebUI: 400 "Duplicate content detected";
    LightRAG: the copy FAILS as "Content already exists"), so a corpus with duplicates would lose
    documents that qrels may judge. Ingest one copy, and expand it back when mapping results.
    """

    documents: dict[str, Document]  # representative id -> document, in corpus order
    aliases: dict[str, list[str]] = field(default_factory=dict)  # representative -> the other ids

    @classmethod
    def of(cls, corpus: dict[str, Document]) -> DedupedCorpus:
        by_text: dict[str, str] = {}
        documents: dict[str, Document] = {}
        aliases: dict[str, list[str]] = {}
        for doc_id, doc in corpus.items():
            text = doc.full_text.strip()
            rep = by_text.setdefault(text, doc_id)
            if rep == doc_id:
                documents[doc_id] = doc
            else:
                aliases.setdefault(rep, []).append(doc_id)
        return cls(documents, aliases)

    @property
    def duplicate_count(self) -> int:
        return sum(len(v) for v in self.aliases.values())

    def expand(self, pairs: Iterable[tuple[str, float | None]]) -> list[tuple[str, float | None]]:
        """Each representative followed by its identical copies, at the same score."""
        out: list[tuple[str, float | None]] = []
        for doc_id, score in pairs:
            out.append((doc_id, score))
            out.extend((alias, score) for alias in self.aliases.get(doc_id, []))
        return out

    def chunk_text(self, doc_id: str | None, text: str) -> str:
        """A returned chunk's text without the title ragbench put before the document's text at ingest:
        answer measures exclude titles, as DPR does. A chunk of no known document is kept whole."""
        doc = self.documents.get(doc_id) if doc_id else None
        if doc is not None and doc.title and text.startswith(f"{doc.title} "):
            return text[len(doc.title) + 1 :]
        return text

    def describe(self) -> CorpusDescription:
        return {
            "distinct_texts": len(self.documents),
            "identical_copies": self.duplicate_count,
            "identical_groups": dict(list(self.aliases.items())[:20]),
        }


def parallel(
    items: list[T],
    fn: Callable[[T], R],
    concurrency: int,
    advance: Callable[[int], None],
) -> list[R]:
    """`fn` over `items` with at most `concurrency` in flight; results in input order.

    The first exception (a ServerError: the server is gone or refuses) cancels what has not
    started and propagates; finished work has already been reported through `fn`'s side effects.
    """
    results: list[R | None] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                results[futures[future]] = future.result()
                advance(1)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results  # type: ignore[return-value]


def timed_query(qid: str, run: Callable[[], tuple[list[Hit], list[str], list[str]]]) -> QueryResult:
    """Run one query (`run` gives hits, warnings and the returned chunk texts); a per-query server
    refusal becomes that query's error, not the run's end. No answer at all (`ServerUnreachable`)
    propagates, for `run_queries` to count."""
    start = time.perf_counter()
    try:
        hits, warnings, passages = run()
        return QueryResult(qid, hits, time.perf_counter() - start, warnings=warnings, passages=passages)
    except ServerUnreachable:
        raise
    except ServerError as exc:
        return QueryResult(qid, [], time.perf_counter() - start, error=str(exc))


def run_queries(
    queries: dict[str, str],
    run_one: Callable[[str, str], QueryResult],
    concurrency: int,
    advance: Callable[[int], None],
) -> list[QueryResult]:
    """Every query through `run_one(qid, text)`, at most `concurrency` in flight, results in input order.

    A query without an HTTP answer is that query's error; after MAX_UNREACHABLE of them in a row the
    target ends with `TargetFailed`, which carries the queries finished so far and the reason.
    """
    finished: dict[str, QueryResult] = {}
    unanswered: list[str] = []  # the current run of queries without an answer
    failure: TargetFailed | None = None
    lock = threading.Lock()

    def one(item: tuple[str, str]) -> QueryResult:
        nonlocal failure
        qid, text = item
        with lock:
            if failure is not None:  # a worker must not start another query once the target has ended
                raise failure
        start = time.perf_counter()
        try:
            result, lost = run_one(qid, text), None
        except ServerUnreachable as exc:
            result, lost = QueryResult(qid, [], time.perf_counter() - start, error=str(exc)), exc
        with lock:
            unanswered[:] = [*unanswered, qid] if lost else []
            finished[qid] = result
            if lost and len(unanswered) >= MAX_UNREACHABLE:
                kept = [finished[q] for q in queries if q in finished and q not in unanswered]
                failure = TargetFailed(
                    f"{lost} — {len(unanswered)} queries in a row got no answer, so the target "
                    f"was ended after {len(kept)} of {len(queries)} queries",
                    kept,
                )
                raise failure
        return result

    return parallel(list(queries.items()), one, concurrency, advance)
