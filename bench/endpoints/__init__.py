"""Endpoints: "texts -> vectors" and "query + texts -> scores" over every serving path.

from bench.endpoints import parse_endpoint_spec, open_endpoint
endpoint = open_endpoint(parse_endpoint_spec("local=openai@http://127.0.0.1:7997?model=all-MiniLM-L6-v2"))
vectors = endpoint.embed(["a text"]).vectors
"""

from bench.core.http import HttpStatusError
from bench.endpoints.base import CallTiming, Embedder, Embeddings, Reranker, Scores
from bench.endpoints.spec import EndpointSpec, open_endpoint, parse_endpoint_spec

__all__ = [
    "CallTiming",
    "Embedder",
    "Embeddings",
    "EndpointSpec",
    "HttpStatusError",
    "Reranker",
    "Scores",
    "open_endpoint",
    "parse_endpoint_spec",
]
