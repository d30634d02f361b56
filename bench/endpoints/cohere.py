"""Cohere-shaped rerank (`/v1/rerank`, `/v2/rerank`, infinity's `/rerank`), as LiteLLM and infinity serve it.

Body `{model, query, documents, top_n, return_documents}` -> `{results: [{index, relevance_score}]}`.
A URL whose path already ends in `/rerank` is used verbatim (as Open WebUI uses its reranker URL);
otherwise `/rerank` is appended to the base: `http://litellm:4000/v1` -> `/v1/rerank`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from bench.endpoints.base import (
    CallTiming,
    EndpointDescription,
    EndpointKind,
    Scores,
    WireRequest,
    WireShapeError,
    batches,
    rerank_cap,
    scores_from_results,
    scores_of,
)
from bench.endpoints.client import HttpEndpoint
from bench.endpoints.options import CohereOptions
from bench.endpoints.wire_bodies import CohereRerankBody


def rerank_url(url: str) -> str:
    url = url.rstrip("/")
    return url if urlsplit(url).path.endswith("/rerank") else f"{url}/rerank"


class CohereRerankWire:
    """The Cohere rerank wire shape:
    `{query, documents, return_documents, model?, top_n?, raw_scores?}` -> `{results}`."""

    def __init__(self, url: str, model: str | None, raw_scores: bool | None = None):
        self.url = rerank_url(url)
        self.model = model
        self.raw_scores = raw_scores  # infinity's extension; Cohere and LiteLLM have no such field

    def request(self, query: str, texts: list[str], top_n: int | None = None) -> WireRequest:
        body: CohereRerankBody = {"query": query, "documents": list(texts), "return_documents": False}
        if self.model:
            body["model"] = self.model
        if top_n is not None:
            body["top_n"] = top_n
        if self.raw_scores is not None:
            body["raw_scores"] = self.raw_scores
        return WireRequest("POST", self.url, body, len(texts), rerank_cap(texts))

    def parse(self, answer: Any, n: int, top_n: int | None = None) -> list[tuple[int, float]]:
        """A score for each of the `n` documents, or for the `top_n` best when the request asked for fewer."""
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
            raise WireShapeError("{results: [{index, relevance_score}]}")
        pairs = [(item.get("index"), item.get("relevance_score")) for item in results]
        return scores_of(pairs, n, top_n)


class CohereReranker:
    """query + texts -> scores through a Cohere-shaped rerank route."""

    kind = EndpointKind.COHERE

    def __init__(self, name: str, url: str, given: CohereOptions, transport: httpx.BaseTransport | None = None):
        self.name = name
        self.http = HttpEndpoint(name, url, given.key_env, given.timeout_s, transport)
        self.wire = CohereRerankWire(self.http.url, given.model, given.raw_scores)
        self.batch_size = given.batch  # documents per request (the server's limit); None: all in one

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        """One request, or (`batch_size`) several whose scores are merged: a cross-encoder scores each pair
        on its own, so the split is exact; top_n then applies to the merged ranking."""
        parts = batches(len(texts), self.batch_size or len(texts)) if texts else [range(0)]
        pairs: list[tuple[int, float]] = []
        calls: list[CallTiming] = []
        for part in parts:
            asked = top_n if len(parts) == 1 else None
            found, call = self._send(query, [texts[i] for i in part], asked)
            pairs += [(part.start + index, score) for index, score in found]
            calls.append(call)
        if len(parts) > 1:
            pairs = sorted(pairs, key=lambda pair: -pair[1])[:top_n]
        scores, order = scores_from_results(len(texts), pairs)
        return Scores(scores, order, calls)

    def _send(self, query: str, texts: list[str], top_n: int | None) -> tuple[list[tuple[int, float]], CallTiming]:
        request = self.wire.request(query, texts, top_n)
        response, wall_ms = self.http.request_retrying(request.method, request.url, request.payload, request.cap)
        answer = self.http.json_of(response)
        try:
            pairs = self.wire.parse(answer, len(texts), top_n)
        except WireShapeError as exc:
            raise self.http.shape_error(request.url, exc.expected, answer) from None
        return pairs, CallTiming(len(texts), wall_ms)

    def describe(self) -> EndpointDescription:
        return {"kind": self.kind, "url": self.wire.url, "model": self.wire.model}

    def dtype(self) -> str | None:
        return None

    def close(self) -> None:
        self.http.close()
