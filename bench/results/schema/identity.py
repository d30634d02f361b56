"""The results file's identity records: each endpoint's own checks, each compared pair, and the verdict."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class IdentityVerdict(StrEnum):
    """An identity check's outcome: a check without enough data to judge is not a pass either."""

    PASS = "pass"
    FAIL = "fail"
    INSUFFICIENT = "insufficient data"


@dataclass
class IdentityEndpointRecord:
    name: str
    config: dict[str, Any]  # the endpoint's describe(): kind, URL (masked), model, dtype
    seconds: float  # time spent waiting on this endpoint
    # embedding endpoints: a text alone vs the same text inside a batch
    batch_texts: int | None = None
    batch_min_cosine: float | None = None
    batch_threshold: float | None = None
    batch_verdict: IdentityVerdict | None = None
    # rerank endpoints: was top_n honoured
    top_n_requested: int | None = None
    top_n_returned: int | None = None
    top_n_honoured: bool | None = None
    record: str = "identity_endpoint"


@dataclass(frozen=True)
class Cause:
    """Why two endpoints differ, named by a probe or a signature (bench/identity/diagnose.py), and its fix."""

    #: not_normalised | dimensions_cut | dimensions_cut_not_renormalised | truncated | whitespace_stripped |
    #: prefix_missing | different_model | numeric | truncated_suspected | raw_scores | ...
    code: str
    endpoint: str | None  # the side that behaves differently, when known
    detail: str
    fix: str


@dataclass
class TokenLengthBucket:
    """How closely a pair agrees on the texts of one token-length range."""

    tokens: str  # the range: 0-128, 129-256, 257-512, 513+
    texts: int
    cosine_mean: float
    cosine_min: float
    failing: int  # texts under the pair's min cosine


@dataclass
class WorstText:
    """One of the texts a pair agrees on least."""

    index: int  # its position in the input texts
    tokens: int
    cosine: float
    max_abs_diff: float
    text: str  # the first 160 characters


@dataclass
class NormRange:
    """The norms of one endpoint's vectors."""

    min: float
    mean: float
    max: float


@dataclass
class IdentityEmbedPairRecord:
    """Two embedding endpoints compared: identity's own result for the pair, and its record."""

    a: str
    b: str
    dtype: str  # whose thresholds apply
    thresholds: dict[str, float]  # thresholds.Thresholds without dtype
    texts: int
    dims: dict[str, int]  # endpoint -> dimension
    cosine_min: float
    cosine_p01: float
    cosine_mean: float
    max_abs_diff: float
    max_norm_diff: float
    norms: dict[str, NormRange]  # endpoint -> its norms
    top10_overlap: float | None  # None: too few texts for the neighbour check
    by_token_length: list[TokenLengthBucket]
    worst: list[WorstText]
    verdict: IdentityVerdict
    failures: list[str]
    insufficient: list[str]  # checks without enough data to judge
    causes: list[Cause]
    record: str = "identity_embed_pair"


@dataclass
class IdentityRerankPairRecord:
    a: str
    b: str
    dtype: str
    thresholds: dict[str, float]
    max_score_diff: float
    mean_score_diff: float
    kendall_tau_mean: float | None  # None: no query had two candidates to order
    kendall_tau_min: float | None
    verdict: IdentityVerdict
    failures: list[str]
    insufficient: list[str]
    causes: list[Cause]
    record: str = "identity_rerank_pair"


@dataclass
class IdentitySummaryRecord:
    source: str  # where the texts came from
    texts: int
    queries: int
    token_lengths: str  # "tokenizer <path>" or "words (no tokenizer)"
    verdict: IdentityVerdict  # over every pair, batch invariance and top_n
    total_s: float
    diagnosis_s: float  # probing failed pairs
    suite_s: float  # ragbench's own work: everything but endpoints and diagnosis
    record: str = "identity"
