"""Loopback servers (no model) that degrade under load, for `quality --background` tests.

`UnderloadServer`, a TEI-shaped embedder:
- `/embed`: a hashed bag of words (crc32 of each lower-cased word into DIM buckets, L2-normalised), answered
  `service_ms` after the request arrived; when more than `max_inflight` requests are in flight (this one included),
  every input is cut to its first `truncate_words` words first — TEI's `--auto-truncate` under batch-token pressure,
  made deterministic;
- `/info`: a TEI-shaped model description; anything else 404.
`truncated` counts the requests that were cut, so a test can say the effect came from the load. A `failing`
server answers HTTP `fail_status` (500: TEI's body) to every `fail_every`-th `/embed` request after its first
`fail_after`, all of them by default: a stream that fails once its endpoint answered the preflight.

`OverloadedReranker`, an infinity-shaped reranker that answers 429 above a concurrency, and `write_marked_queries`,
the set on which only its (oracle) scores find the relevant documents: Open WebUI's reranker under load.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Self

from bench.commands.quality import QualityRequest, quality_command
from bench.results.store import Results, read_results
from tests.harness.stubs import JsonStub, Seen, Whole

DIM = 1024
QUERIES = 40
FILLER = [
    "please",
    "find",
    "the",
    "passage",
    "in",
    "the",
    "collection",
    "that",
    "talks",
    "about",
    "the",
    "following",
    "subject",
]


def ndcg_at_10(dataset: Path, out: Path, targets: list[str], endpoint: str, background: str | None = None) -> Results:
    """`ragbench quality` measuring nDCG@10 of `targets` with one `-e` endpoint (`--background` where given),
    read back from its results file."""
    request = QualityRequest(
        dataset=dataset, targets=targets, endpoints=[endpoint], measures=["nDCG@10"], out=out, background=background
    )
    quality_command(request)
    return read_results(out / "results.jsonl")


def write_long_queries(root: Path, queries: int = QUERIES) -> Path:
    """A JSONL Q&A set whose every query is 70 words of filler the documents do not hold, then its document's two
    own words: cut to 64 words, every query keeps only the filler, and ranks nothing above anything else."""
    docs = [{"_id": f"d{i}", "text": f"alpha{i} beta{i} gamma{i} shared words here"} for i in range(queries)]
    filler = " ".join(FILLER[j % len(FILLER)] for j in range(70))
    qa = [{"id": f"q{i}", "query": f"{filler} alpha{i} beta{i}", "relevant": [f"d{i}"]} for i in range(queries)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qa))
    return root


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % DIM] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


NOT_FOUND = (404, {"error": "not found", "error_type": "NotFound"})


class _JsonServer(JsonStub):
    """A loopback JSON server on a free port (the shared stub): `get` and `post` answer (status, body) per path."""

    def __init__(self) -> None:
        super().__init__({}, default=Whole(self._route), start=False)
        self.lock = threading.Lock()
        self.inflight = 0

    def start(self) -> Self:
        super().start()
        return self

    def _route(self, seen: Seen) -> tuple[int, Any]:
        path = seen.path
        if seen.method == "GET":
            return self.get(path)
        return self.post(path, json.loads(seen.body or b"{}"), seen.headers.get("user-agent", ""))

    def get(self, path: str) -> tuple[int, Any]:
        return NOT_FOUND

    def post(self, path: str, body: Any, agent: str) -> tuple[int, Any]:
        return NOT_FOUND


class UnderloadServer(_JsonServer):
    def __init__(
        self,
        max_inflight: int,
        truncate_words: int = 64,
        service_ms: float = 40.0,
        fail_after: int | None = None,
        fail_every: int = 1,
        fail_status: int = 500,
    ):
        super().__init__()
        self.max_inflight, self.truncate_words, self.service_s = max_inflight, truncate_words, service_ms / 1000
        self.fail_after, self.fail_every, self.fail_status = fail_after, fail_every, fail_status
        self.embed_calls = 0
        self.truncated = 0
        self.failed = 0

    def get(self, path: str) -> tuple[int, Any]:
        if path != "/info":
            return NOT_FOUND
        info = {
            "model_id": "underload-bag-of-words",
            "model_dtype": "float32",
            "model_type": {"embedding": {"pooling": "mean"}},
            "max_client_batch_size": 32,
            "max_input_length": 512,
            "version": "1.9.3",
        }
        return 200, info

    def post(self, path: str, body: Any, agent: str) -> tuple[int, Any]:
        if path != "/embed":
            return NOT_FOUND
        with self.lock:
            self.embed_calls += 1
            late = self.embed_calls - (self.fail_after or 0)
            failing = self.fail_after is not None and late > 0 and late % self.fail_every == 0
            self.failed += failing
        if failing:
            return self.fail_status, {"error": "injected failure", "error_type": "Backend"}
        inputs = body.get("inputs")
        return 200, self.embed([inputs] if isinstance(inputs, str) else list(inputs))

    def embed(self, texts: list[str]) -> list[list[float]]:
        arrived = time.monotonic()
        with self.lock:
            self.inflight += 1
            crowded = self.inflight > self.max_inflight
            self.truncated += crowded
        try:
            if crowded:
                texts = [" ".join(t.split()[: self.truncate_words]) for t in texts]
            vectors = [bag_of_words(t) for t in texts]
            time.sleep(max(0.0, arrived + self.service_s - time.monotonic()))
            return vectors
        finally:
            with self.lock:
                self.inflight -= 1


TOPICS = [
    "apple",
    "river",
    "violin",
    "comet",
    "glacier",
    "tiger",
    "copper",
    "tulip",
    "harbor",
    "falcon",
    "marble",
    "canyon",
]


def marker(query: str) -> str:
    """The word that marks `query`'s relevant document, for the oracle reranker below."""
    return f"ref{zlib.crc32(query.encode()) % 1_000_000:06d}"


def write_marked_queries(root: Path, topics: list[str] = TOPICS) -> Path:
    """A JSONL Q&A set where only the oracle reranker finds the relevant documents: query `what is known about the
    T` has a distractor that talks about T and nothing else, and a relevant document that shares no word with the
    query, only its `marker`. Without the reranker (BM25 + embeddings) each distractor ranks above its relevant
    document; reranked, every relevant document is first (nDCG@10 1.0)."""
    qa, docs = [], []
    for i, topic in enumerate(topics):
        query = f"what is known about the {topic}"
        docs.append({"_id": f"x{i}", "text": f"The {topic} is described here: {topic} facts, {topic} history."})
        docs.append({"_id": f"d{i}", "text": f"Archive entry {marker(query)}, filed under code {marker(query)}."})
        qa.append({"id": f"q{i}", "query": query, "relevant": [f"d{i}"]})
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qa))
    return root


class OverloadedReranker(_JsonServer):
    """An infinity-shaped reranker (Cohere protocol, infinity-emb 0.0.78's bodies) that refuses work above a
    concurrency, as infinity does when its queue is full and TEI does when no permit is free:
    - `POST /rerank {model, query, documents, top_n?}` -> `{model, results: [{relevance_score, index}] best first,
      usage}`, answered `service_ms` after the request arrived; an oracle: 1.0 for a document holding the query's
      `marker`, 0.0 for any other, so the reranked order is perfect and any loss under load is the fallback's;
    - when more than `max_inflight` requests are in flight (this one included), at once HTTP 429 with infinity's
      body `{"error": {"message": "model M is currently overloaded", "type": null, "param": null, "code": 429}}`.
    `answered` and `refused` count the requests by their client (User-Agent up to its `/`: Open WebUI's reranker
    client is python-requests), so a test can say whose requests the load refused."""

    def __init__(self, max_inflight: int, service_ms: float = 400.0):
        super().__init__()
        self.max_inflight, self.service_s = max_inflight, service_ms / 1000
        self.answered: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()

    def post(self, path: str, body: Any, agent: str) -> tuple[int, Any]:
        if path != "/rerank":
            return NOT_FOUND
        arrived, client = time.monotonic(), agent.split("/")[0]
        model = str(body.get("model") or "oracle")
        with self.lock:
            if self.inflight >= self.max_inflight:
                self.refused[client] += 1
                message = f"model {model} is currently overloaded"
                return 429, {"error": {"message": message, "type": None, "param": None, "code": 429}}
            self.inflight += 1
            self.answered[client] += 1
        try:
            documents = [str(d) for d in body.get("documents") or []]
            scores = [1.0 if marker(str(body.get("query"))) in d else 0.0 for d in documents]
            order = sorted(range(len(documents)), key=lambda i: -scores[i])[: body.get("top_n") or len(documents)]
            time.sleep(max(0.0, arrived + self.service_s - time.monotonic()))
            words = sum(len(d.split()) for d in documents)
            results = [{"relevance_score": scores[i], "index": i} for i in order]
            return 200, {"model": model, "results": results, "usage": {"prompt_tokens": words, "total_tokens": words}}
        finally:
            with self.lock:
                self.inflight -= 1
