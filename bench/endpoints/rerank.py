"""Cohere-shaped rerank (`/v1/rerank`, `/v2/rerank`, infinity's `/rerank`), as LiteLLM and infinity serve it.

Body `{model, query, documents, top_n, return_documents}` -> `{results: [{index, relevance_score}]}`.
A URL whose path already ends in `/rerank` is used verbatim (as Open WebUI uses its reranker URL);
otherwise `/rerank` is appended to the base: `http://litellm:4000/v1` -> `/v1/rerank`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bench.endpoints.base import CallTiming, Scores, scores_from_results
from bench.endpoints.http import HttpEndpoint


def rerank_url(url: str) -> str:
    url = url.rstrip("/")
    return url if urlsplit(url).path.endswith("/rerank") else f"{url}/rerank"


class CohereReranker:
    """query + texts -> scores through a Cohere-shaped rerank route."""

    kind = "cohere"

    def __init__(self, name: str, url: str, model: str | None, key_env: str | None = None, raw_scores: bool | None = None):
        self.name = name
        self.http = HttpEndpoint(name, url, key_env)
        self.route = rerank_url(url)
        self.model = model
        self.raw_scores = raw_scores  # infinity's extension; Cohere and LiteLLM have no such field

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        body: dict[str, Any] = {"query": query, "documents": texts, "return_documents": False}
        if self.model:
            body["model"] = self.model
        if top_n is not None:
            body["top_n"] = top_n
        if self.raw_scores is not None:
            body["raw_scores"] = self.raw_scores
        response, wall_ms = self.http.request("POST", self.route, body)
        answer = self.http.json_of(response)
        results = answer.get("results") if isinstance(answer, dict) else None
        pairs: list[tuple[int, float]] = []
        if isinstance(results, list):
            for item in results:
                if not isinstance(item, dict):
                    break
                index, score = item.get("index"), item.get("relevance_score")
                if not isinstance(index, int) or not 0 <= index < len(texts) or not isinstance(score, (int, float)):
                    break
                pairs.append((index, float(score)))
        if not isinstance(results, list) or len(pairs) != len(results):
            raise self.http.shape_error(self.route, "{results: [{index, relevance_score}]}", answer)
        scores, order = scores_from_results(len(texts), pairs)
        return Scores(scores, order, [CallTiming(len(texts), wall_ms)])

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "url": self.route, "model": self.model}

    def dtype(self) -> str | None:
        return None

    def close(self) -> None:
        self.http.close()
