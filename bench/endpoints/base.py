"""The endpoint protocol: "texts -> vectors" and "query + texts -> scores", each with timings.

Identity and load work only through these two protocols, so every serving path (TEI, an
OpenAI-compatible server, a Cohere-shaped reranker, the in-process reference) is swappable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypedDict, runtime_checkable

import numpy as np
from typing_extensions import ReadOnly

from bench.core.http import DEFAULT_CAP, MIB, BodyCap

# Answer caps from what a legitimate answer can hold (bench/core/http/cap.py), with a generous floor: a float as
# JSON text takes up to ~25 bytes ("-0.012345678901234567, "), counted as 32; up to 16,384 dimensions while the
# endpoint's are not known yet; a rerank score object well under 256 bytes, and the document's text at most 6 times
# its size where the server sends it back (JSON escapes).
ANSWER_FLOOR = 16 * MIB
BYTES_PER_VALUE = 32
MAX_DIMENSIONS = 16_384
BYTES_PER_SCORE = 256


class EndpointKind(StrEnum):
    """What serves an endpoint, as its spec names it (`NAME=KIND@URL`)."""

    TEI = "tei"
    TEI_RERANK = "tei-rerank"
    OPENAI = "openai"
    COHERE = "cohere"
    REFERENCE = "reference"
    REFERENCE_RERANK = "reference-rerank"


def embed_cap(texts: int, dim: int | None) -> BodyCap:
    """The cap on an embedding answer of `texts` vectors of `dim` dimensions (None: not known yet)."""
    dims = dim or MAX_DIMENSIONS
    size = max(ANSWER_FLOOR, texts * dims * BYTES_PER_VALUE)
    return BodyCap(size, f"an embedding answer of {texts} text{'s' * (texts != 1)} × {dims:,} dimensions")


def rerank_cap(texts: list[str]) -> BodyCap:
    """The cap on a rerank answer for `texts`: a score each, and their texts where the server returns them."""
    size = ANSWER_FLOOR + len(texts) * BYTES_PER_SCORE + 6 * sum(len(t.encode()) for t in texts)
    return BodyCap(size, f"a rerank answer of {len(texts)} document{'s' * (len(texts) != 1)}")


@dataclass(frozen=True)
class CallTiming:
    """One request: how many inputs, client-side wall time, and what the server reported about it."""

    inputs: int
    wall_ms: float
    server: dict[str, float] = field(default_factory=dict)  # e.g. TEI's x-inference-time (ms), x-compute-tokens


@dataclass
class Embeddings:
    vectors: np.ndarray  # (n, dim) float32, in input order
    calls: list[CallTiming]


@dataclass
class Scores:
    scores: np.ndarray  # (n,) float32 by input index; NaN where the endpoint returned no score (top_n)
    order: list[int]  # input indexes in the order the endpoint ranked them
    calls: list[CallTiming]


@dataclass(frozen=True)
class WireRequest:
    """One request exactly as an endpoint kind shapes it (its wire contract, defined once per kind).

    The API clients send `payload` through httpx; the load generator encodes `body()` once and
    replays the bytes on its own connections. Both read answers with the same wire's `parse`.
    """

    method: str
    url: str  # the full route URL
    payload: Mapping[str, object]  # a typed body (bench/endpoints/wire_bodies.py) or a plain one
    inputs: int  # texts (embed) or documents (rerank) in this request
    cap: BodyCap = DEFAULT_CAP  # the most an answer to it can legitimately be (`embed_cap`, `rerank_cap`)

    def body(self) -> bytes:
        return json.dumps(self.payload, ensure_ascii=False, separators=(",", ":")).encode()


class WireShapeError(ValueError):
    """An answer that is valid JSON but not the shape the endpoint kind promises."""

    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


def vectors_of(rows: Any, n: int, dim: int | None = None) -> np.ndarray:
    """The one check of an embedding answer, whatever the wire: `n` vectors of finite numbers, all of one
    non-zero dimension (`dim` when it is known from earlier answers), as an (n, dim) float32 array.
    Raises WireShapeError naming what is wrong."""
    if not isinstance(rows, list) or len(rows) != n or not all(isinstance(row, (list, np.ndarray)) for row in rows):
        raise WireShapeError(f"[[float]] for {n} inputs")
    if not n:
        return np.zeros((0, dim or 0), dtype=np.float32)
    try:
        array = np.asarray(rows)  # in C: rows of different lengths raise, anything but numbers shows in the dtype
    except ValueError:
        raise WireShapeError(f"[[float]] for {n} inputs, every vector of one dimension") from None
    if array.dtype.kind not in "iuf" or _holds_booleans(rows, array):
        raise WireShapeError(f"[[float]] for {n} inputs (a vector holds something other than numbers)")
    return check_vectors(array, n, dim).astype(np.float32, copy=False)


def _holds_booleans(rows: list[Any], array: np.ndarray) -> bool:
    """Whether JSON true/false stood among the numbers: numpy reads them as 1 and 0 beside numbers, so they
    are looked for, in Python, only in an answer holding an exact 0 or 1 (the vectorised test keeps the
    cost off every other answer)."""
    if not ((array == 0) | (array == 1)).any():
        return False
    return any(type(x) is bool for row in rows if isinstance(row, list) for x in row)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_vectors(vectors: np.ndarray, n: int, dim: int | None = None) -> np.ndarray:
    """(n, dim) finite vectors of a non-zero dimension (`dim` when known): the part of `vectors_of` that
    holds for any endpoint, in-process ones included."""
    if vectors.ndim != 2 or vectors.shape[0] != n:
        raise WireShapeError(f"{n} vectors (got an array of shape {vectors.shape})")
    if n and vectors.shape[1] == 0:
        raise WireShapeError("vectors of a non-zero dimension (got empty vectors)")
    if n and dim is not None and vectors.shape[1] != dim:
        raise WireShapeError(f"vectors of dimension {dim}, as in the earlier answers (got {vectors.shape[1]})")
    if vectors.size and not np.abs(vectors).max() <= _FLOAT32_MAX:  # false for NaN too
        raise WireShapeError("finite numbers float32 can hold (a vector holds NaN, an infinite or a huge value)")
    return vectors


def scores_of(pairs: list[tuple[Any, Any]], n: int, top_n: int | None = None) -> list[tuple[int, float]]:
    """The one check of a rerank answer, whatever the wire: a score for each of the `n` documents sent (with
    `top_n`, at least the top_n best: a server that ignores top_n is identity's finding, not a broken answer),
    each index a document sent and named once, each score a finite number."""
    least = n if top_n is None else min(n, top_n)
    if not least <= len(pairs) <= n:
        wanted = f"{n}" if least == n else f"{least} to {n}"
        raise WireShapeError(f"a score for each of {wanted} documents (got {len(pairs)})")
    seen: set[int] = set()
    for index, score in pairs:
        if type(index) is not int or not 0 <= index < n or index in seen:
            raise WireShapeError(f"each document index in 0..{n - 1} once (got {index!r})")
        if type(score) not in (int, float) or not _finite(score):
            raise WireShapeError(f"a finite number as the score of document {index} (got {score!r})")
        seen.add(index)
    return [(index, float(score)) for index, score in pairs]


def _finite(value: int | float) -> bool:  # math.isfinite, for ints beyond float too
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


class EmbedWire(Protocol):
    """texts -> request; decoded JSON answer -> (n, dim) vectors. Pure: no sockets, picklable."""

    dim: int | None  # the dimension every answer must keep (learnt from the first one, or set by a preflight)

    def request(self, texts: list[str]) -> WireRequest: ...

    def parse(self, answer: Any, n: int) -> np.ndarray: ...  # through `vectors_of`


class EndpointDescription(TypedDict, total=False):
    """An endpoint's `describe()`: kind, URL (masked), model, dtype, and the request options it sends."""

    kind: EndpointKind
    url: str
    model: str | None  # Cohere's is optional
    dtype: str | None
    version: str  # TEI /info
    max_client_batch_size: int  # TEI /info, embedders
    # TEI's request options (bench.endpoints.wire_bodies), as sent
    normalize: bool
    truncate: bool
    truncation_direction: str
    dimensions: ReadOnly[int | None]  # also OpenAI's (None: not asked for); read-only: TEI's `int` fits
    prompt_name: str
    raw_scores: bool
    return_text: bool
    # OpenAI's
    encoding_format: str | None
    batch_size: int  # also the reference models'
    tokenizer: str | None
    # the in-process reference models: their folder's name and hash
    model_fingerprint: str
    cross_encoder: str
    cross_encoder_fingerprint: str


class NamedEndpoint(EndpointDescription, total=False):
    """`identity`'s endpoint entry: the spec's name with the endpoint's description."""

    name: str


class ServedIdentity(TypedDict, total=False):
    """What the served vectors depend on, as the endpoint tells it (`served_key` hashes it, sorted, as JSON)."""

    kind: EndpointKind
    info: None  # TEI whose /info was not read
    model: str
    sha: object  # TEI /info's model_sha as sent (None: not sent)
    dtype: str
    pooling: object  # TEI /info's model_type.embedding.pooling as sent
    max_input_length: int
    dimensions: ReadOnly[int | None]
    normalize: bool
    truncate: bool
    truncation_direction: str
    prompt_name: str


class RerankWire(Protocol):
    """query + texts -> request; decoded JSON answer -> (index, score) pairs as the endpoint ranked them."""

    def request(self, query: str, texts: list[str], top_n: int | None = None) -> WireRequest: ...

    def parse(
        self, answer: Any, n: int, top_n: int | None = None
    ) -> list[tuple[int, float]]: ...  # through `scores_of`


@runtime_checkable
class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> Embeddings: ...

    def describe(self) -> EndpointDescription: ...

    def dtype(self) -> str | None: ...  # the serving dtype when the endpoint says (TEI /info), else None

    def close(self) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores: ...

    def describe(self) -> EndpointDescription: ...

    def dtype(self) -> str | None: ...

    def close(self) -> None: ...


def batches(n: int, size: int) -> list[range]:
    """Index ranges of at most `size` items covering 0..n."""
    size = max(1, size)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def scores_from_results(n: int, results: list[tuple[int, float]]) -> tuple[np.ndarray, list[int]]:
    """(index, score) pairs as the endpoint returned them -> a score per input and the ranked order."""
    scores = np.full(n, np.nan, dtype=np.float32)
    order: list[int] = []
    for index, score in results:
        scores[index] = score
        order.append(index)
    return scores, order
