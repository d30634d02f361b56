"""Cohere-shaped rerank (`/v1/rerank`, `/v2/rerank`, infinity's `/rerank`), as LiteLLM and infinity serve it.

Body `{model, query, documents, top_n, return_documents}` -> `{results: [{index, relevance_score}]}`.
A URL whose path already ends in `/rerank` is used verbatim (as Open WebUI uses its reranker URL);
otherwise `/rerank` is appended to the base: `http://litellm:4000/v1` -> `/v1/rerank`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bench.endpoints.base import CallTiming, Scores, WireRequest, WireShapeError, scores_from_results, scores_of
from bench.endpoints.client import HttpEndpoint


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
        body: dict[str, Any] = {"query": query, "documents": list(texts), "return_documents": False}
        if self.model:
            body["model"] = self.model
        if top_n is not None:
            body["top_n"] = top_n
        if self.raw_scores is not None:
            body["raw_scores"] = self.raw_scores
        return WireRequest("POST", self.url, body, len(texts))

    def parse(self, answer: Any, n: int, top_n: int | None = None) -> list[tuple[int, float]]:
        """A score for each of the `n` documents, or for the `top_n` best when the request asked for fewer."""
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
            raise WireShapeError("{results: [{index, relevance_score}]}")
        pairs = [(item.get("index"), item.get("relevance_score")) for item in results]
        return scores_of(pairs, n, top_n)


class CohereReranker:
    """query + texts -> scores through a Cohere-shaped rerank route."""

    kind = "cohere"

    def __init__(
        self,
        name: str,
        url: str,
        model: str | None,
        key_env: str | None = None,
        raw_scores: bool | None = None,
        timeout_s: float = 120.0,
    ):
        self.name = name
        self.http = HttpEndpoint(name, url, key_env, timeout_s)
        self.wire = CohereRerankWire(self.http.url, model, raw_scores)

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        request = self.wire.request(query, texts, top_n)
        response, wall_ms = self.http.request(request.method, request.url, request.payload)
        answer = self.http.json_of(response)
        try:
            pairs = self.wire.parse(answer, len(texts), top_n)
        except WireShapeError as exc:
            raise self.http.shape_error(request.url, exc.expected, answer) from None
        scores, order = scores_from_results(len(texts), pairs)
        return Scores(scores, order, [CallTiming(len(texts), wall_ms)])

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "url": self.wire.url, "model": self.wire.model}

    def dtype(self) -> str | None:
        return None

    def close(self) -> None:
        self.http.close()
