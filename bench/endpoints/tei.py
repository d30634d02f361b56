"""Text Embeddings Inference as an embedder (/embed) and a reranker (/rerank): their wire shapes and clients.

Follows TEI's code where its OpenAPI document disagrees (see docs/endpoints.md): too many inputs is
422 since 1.9.0 and 413 before, so both are read as "split smaller" (`bench.endpoints.tei_client`); 429 means no
permit was free (since 1.9.0 every input takes one) and is retried with a short backoff.
"""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np

from bench.core.errors import ServerError
from bench.core.http import HttpStatusError
from bench.endpoints.base import (
    CallTiming,
    Embeddings,
    EndpointDescription,
    EndpointKind,
    Scores,
    ServedIdentity,
    WireRequest,
    WireShapeError,
    embed_cap,
    rerank_cap,
    scores_from_results,
    scores_of,
    vectors_of,
)
from bench.endpoints.cache import probe_vectors, served_key
from bench.endpoints.options import TeiOptions, TeiRerankOptions
from bench.endpoints.tei_client import TeiBatches, TeiClient
from bench.endpoints.wire_bodies import TeiEmbedParams, TeiRerankParams


class TeiEmbedWire:
    """TEI's /embed wire shape: `{inputs, normalize, truncate?, ...}` -> `[[f32]]`."""

    def __init__(self, url: str, options: TeiEmbedParams):
        self.url = f"{url.rstrip('/')}/embed"
        self.options = options
        self.dim: int | None = None  # learnt from the first answer: a dimension that changes later is an error

    def request(self, texts: list[str]) -> WireRequest:
        asked = self.options.get("dimensions")
        dim = self.dim or (asked if isinstance(asked, int) else None)
        return WireRequest(
            "POST", self.url, {"inputs": list(texts), **self.options}, len(texts), embed_cap(len(texts), dim)
        )

    def parse(self, answer: Any, n: int) -> np.ndarray:
        vectors = vectors_of(answer, n, self.dim)
        if n and self.dim is None:
            self.dim = vectors.shape[1]
        return vectors


class TeiRerankWire:
    """TEI's /rerank wire shape: `{query, texts, raw_scores, return_text}` -> `[{index, score}]`
    (no top_n on the wire)."""

    def __init__(self, url: str, options: TeiRerankParams):
        self.url = f"{url.rstrip('/')}/rerank"
        self.options = options

    def request(self, query: str, texts: list[str], top_n: int | None = None) -> WireRequest:
        body = {"query": query, "texts": list(texts), **self.options}
        return WireRequest("POST", self.url, body, len(texts), rerank_cap(texts))

    def parse(self, answer: Any, n: int, top_n: int | None = None) -> list[tuple[int, float]]:
        """TEI scores every text (it has no top_n): `n` results whatever `top_n` says."""
        if not isinstance(answer, list) or not all(isinstance(r, dict) for r in answer):
            raise WireShapeError("[{index, score}]")
        return scores_of([(r.get("index"), r.get("score")) for r in answer], n)


class _TeiEndpoint:
    """What TEI's embedder and reranker share: /info in `describe` (with `shows_batch_limit`), the dtype, close."""

    kind: EndpointKind
    client: TeiClient
    wire: TeiEmbedWire | TeiRerankWire
    shows_batch_limit = False  # `describe` names /info's max_client_batch_size (embedders)

    def describe(self) -> EndpointDescription:
        info = self.client.info()
        shown: EndpointDescription = (
            {"max_client_batch_size": info.max_client_batch_size} if self.shows_batch_limit else {}
        )
        return {
            "kind": self.kind,
            "url": self.client.url,
            "model": info.model_id,
            "dtype": info.model_dtype,
            "version": info.version,
            **shown,
            **self.wire.options,
        }

    def dtype(self) -> str | None:
        return self.client.info().model_dtype

    def close(self) -> None:
        self.client.close()


class TeiEmbedder(_TeiEndpoint):
    """texts -> vectors through TEI's /embed."""

    kind = EndpointKind.TEI
    shows_batch_limit = True
    wire: TeiEmbedWire

    def __init__(self, name: str, url: str, given: TeiOptions, transport: httpx.BaseTransport | None = None):
        self.name = name
        self.client = TeiClient(name, url, given.key_env, given.timeout_s, transport)
        self.events = self.client.events
        self._batched = TeiBatches(self.client, given.batch)
        options: TeiEmbedParams = {"normalize": given.normalize}
        if given.truncate is not None:
            options["truncate"] = given.truncate
        if given.truncation_direction is not None:
            options["truncation_direction"] = given.truncation_direction.capitalize()  # TEI's enum: Left | Right
        if given.dimensions is not None:
            options["dimensions"] = given.dimensions
        if given.prompt_name is not None:
            options["prompt_name"] = given.prompt_name
        self.wire = TeiEmbedWire(self.client.url, options)

    def embed(self, texts: list[str]) -> Embeddings:
        return self._embed(self.wire, texts)

    def _embed(self, wire: TeiEmbedWire, texts: list[str]) -> Embeddings:
        def send(chunk: range) -> tuple[np.ndarray, CallTiming]:
            vectors, timing = self.client.call(wire, wire.request([texts[i] for i in chunk]))
            return vectors, timing

        parts = self._batched.run(len(texts), send)
        vectors = np.vstack([p[0] for p in parts]) if parts else np.zeros((0, 0), dtype=np.float32)
        return Embeddings(vectors, [p[1] for p in parts])

    def request_batch(self) -> int:
        """Texts per request: the `batch` option within the server's max_client_batch_size."""
        return self._batched.size()

    def default_concurrency(self) -> int:
        """Requests in flight when ingesting: as many whole batches as TEI's permits allow, at most 8."""
        permits = self.client.info().max_concurrent_requests if self._info_known() else 0
        return max(1, min(8, permits // max(1, self.request_batch()))) if permits else 4

    def _info_known(self) -> bool:
        try:
            self.client.info()
        except HttpStatusError:  # a proxy in front of TEI may hide /info
            return False
        return True

    def cache_key(self) -> str:
        """`served_key` of /info's identity and the probe vectors: the long probe is longer than /info's
        max_input_length (or than each usual limit where /info tells none) and sent with `truncate: true`, so the
        server cuts it where it really cuts (whatever /info says) instead of refusing it."""
        limit = self.client.info().max_input_length if self._info_known() else None
        wire = TeiEmbedWire(self.client.url, {**self.wire.options, "truncate": True})
        return served_key(self.identity(), probe_vectors(lambda texts: self._embed(wire, texts).vectors, limit))

    def over_limit(self, texts: list[str]) -> tuple[int | None, str]:
        """How many of `texts` are longer than the model's input limit, counted by the server's own tokenizer
        (/tokenize, special tokens in, as /embed counts them) against /info's max_input_length; None with the
        reason where the server does not tell one of the two (a proxy in front of TEI may hide both)."""
        limit = self.client.info().max_input_length if self._info_known() else 0
        if not limit:
            return None, "not counted: TEI /info gives no max_input_length"
        over = 0
        try:
            for start in range(0, len(texts), self.request_batch()):
                tokens = self.client.tokenize(texts[start : start + self.request_batch()])
                over += sum(len(t) > limit for t in tokens)
        except ServerError as exc:
            return None, f"not counted: TEI /tokenize failed ({exc})"
        return over, f"TEI /tokenize vs /info max_input_length {limit}"

    def identity(self) -> ServedIdentity:
        """What the served vectors depend on, as /info tells it (model, weights' sha, dtype, pooling, input
        limit), with this client's request options (normalize, truncate, dimensions, prompt)."""
        known: ServedIdentity
        if not self._info_known():
            known = {"kind": self.kind, "info": None}
        else:
            info = self.client.info()
            known = {
                "kind": self.kind,
                "model": info.model_id,
                "sha": info.model_sha,
                "dtype": info.model_dtype,
                "pooling": info.pooling,
                "max_input_length": info.max_input_length,
            }
        return {**known, **self.wire.options}


class TeiReranker(_TeiEndpoint):
    """query + texts -> scores through TEI's /rerank (which has no top_n: trimmed here)."""

    kind = EndpointKind.TEI_RERANK
    wire: TeiRerankWire

    def __init__(
        self,
        name: str,
        url: str,
        given: TeiRerankOptions,
        transport: httpx.BaseTransport | None = None,
    ):
        self.name = name
        self.client = TeiClient(name, url, given.key_env, given.timeout_s, transport)
        self._batched = TeiBatches(self.client, given.batch)
        options: TeiRerankParams = {"raw_scores": given.raw_scores, "return_text": False}
        if given.truncate is not None:
            options["truncate"] = given.truncate
        self.wire = TeiRerankWire(self.client.url, options)

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        def send(chunk: range) -> tuple[list[tuple[int, float]], CallTiming]:
            pairs, timing = self.client.call(self.wire, self.wire.request(query, [texts[i] for i in chunk]))
            return [(chunk.start + index, score) for index, score in pairs], timing

        parts = self._batched.run(len(texts), send)
        results = sorted((pair for p in parts for pair in p[0]), key=lambda pair: -pair[1])
        if top_n is not None:
            results = results[:top_n]
        scores, order = scores_from_results(len(texts), results)
        return Scores(scores, order, [p[1] for p in parts])
