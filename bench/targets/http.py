"""Shared pieces of the HTTP targets (Open WebUI, LightRAG): a client whose every failure is one
clear `ServerError`, identical-text grouping, and a bounded thread pool with progress."""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from bench.datasets.model import Document
from bench.errors import ServerError
from bench.secrets import mask, register_secret, secret_from_env
from bench.targets.base import Hit, QueryResult

T = TypeVar("T")
R = TypeVar("R")


def api_key(env_name: str) -> str | None:
    """Keys come from the environment only, so they never land in a spec, a result or a report."""
    return secret_from_env(env_name)


class HTTPClient:
    """httpx with the target's auth header; `call()` turns every failure into one `ServerError` line.

    `created` is the list (owned by the target) of what ragbench made on the server so far; every
    error carries it, so a user can clean up after a failure.
    """

    def __init__(
        self,
        server: str,
        base_url: str,
        headers: dict[str, str],
        created: list[str],
        key_env: str,
        timeout_s: float = 300.0,
    ):
        self.server = server
        self.base_url = base_url.rstrip("/")
        self.created = created
        self.key_env = key_env
        for value in headers.values():  # a server could echo a header back; never print a key
            register_secret(value)
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)

    def error(self, message: str) -> ServerError:
        return ServerError(f"{self.server} at {mask(self.base_url)}", mask(message), created=self.created)

    def call(self, method: str, path: str, ok: tuple[int, ...] = (200,), **kwargs: Any) -> httpx.Response:
        """One request; a status outside `ok` raises with the reason named (unreachable, key, missing route)."""
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.ConnectError:
            raise self.error(f"cannot connect ({method} {path}); is the server running at this URL?") from None
        except httpx.TimeoutException:
            raise self.error(f"no answer in time to {method} {path}") from None
        except httpx.HTTPError as exc:
            raise self.error(f"{method} {path} failed: {type(exc).__name__}: {exc}") from None
        if response.status_code in ok:
            return response
        raise self.error(self.describe_status(method, path, response))

    def describe_status(self, method: str, path: str, response: httpx.Response) -> str:
        code = response.status_code
        if code in (401, 403):
            return f"HTTP {code} on {method} {path}: the key was refused; check {self.key_env}"
        if code == 404 and detail_of(response) in ("", "Not Found"):
            return f"HTTP 404 on {method} {path}: this server has no such endpoint (an older version?)"
        if code == 405:
            return f"HTTP 405 on {method} {path}: endpoint not supported by this server version"
        return f"HTTP {code} on {method} {path}: {detail_of(response)[:300]}"

    def close(self) -> None:
        self._client.close()


def file_name(doc_id: str) -> str:
    """A basename-safe, unique file name for a corpus id: `<id>.txt`, and where the id had characters
    a file name cannot keep, the replaced form plus a hash of the original (so two ids never collide)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", doc_id)
    if safe != doc_id or safe.startswith("."):
        safe = f"{safe}-{hashlib.sha1(doc_id.encode()).hexdigest()[:8]}"
    return f"{safe}.txt"


def detail_of(response: httpx.Response) -> str:
    """The server's own words: FastAPI's `detail`, LightRAG's `message`, else the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()
    if isinstance(body, dict):
        for key in ("detail", "message", "error"):
            if body.get(key):
                return str(body[key])
    return response.text.strip()


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
    def of(cls, corpus: dict[str, Document]) -> "DedupedCorpus":
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
            return text[len(doc.title) + 1:]
        return text

    def describe(self) -> dict[str, Any]:
        return {
            "distinct_texts": len(self.documents),
            "identical_copies": self.duplicate_count,
            "identical_groups": {rep: copies for rep, copies in list(self.aliases.items())[:20]},
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
    refusal becomes that query's error, not the run's end."""
    start = time.perf_counter()
    try:
        hits, warnings, passages = run()
        return QueryResult(qid, hits, time.perf_counter() - start, warnings=warnings, passages=passages)
    except ServerError as exc:
        return QueryResult(qid, [], time.perf_counter() - start, error=str(exc))
