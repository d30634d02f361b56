"""The request bodies the endpoint kinds send, as typed shapes (issue 49: wire bodies typed, not untyped dicts).

Keys are the servers' own field names; a key left out is a field not sent (the server's default applies).
"""

from __future__ import annotations

from typing import TypedDict


class TeiEmbedParams(TypedDict, total=False):
    """TEI /embed's options beside `inputs`: what this client sends with every request."""

    normalize: bool
    truncate: bool
    truncation_direction: str  # TEI's enum: Left | Right
    dimensions: int
    prompt_name: str


class TeiRerankParams(TypedDict, total=False):
    """TEI /rerank's options beside `query` and `texts`."""

    raw_scores: bool
    return_text: bool
    truncate: bool


class _CohereRerankRequired(TypedDict):
    query: str
    documents: list[str]
    return_documents: bool


class CohereRerankBody(_CohereRerankRequired, total=False):
    """A Cohere-style /rerank body (Cohere, infinity, LiteLLM); `raw_scores` is infinity's extension."""

    model: str
    top_n: int
    raw_scores: bool


class _OpenAIEmbedRequired(TypedDict):
    model: str
    input: list[str]


class OpenAIEmbedBody(_OpenAIEmbedRequired, total=False):
    """An OpenAI-style /embeddings body."""

    encoding_format: str
    dimensions: int
