"""What an identity run found: each check's outcome, the verdict over all of them, the `--out FILE.json` document."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from bench.endpoints.base import NamedEndpoint
from bench.identity.thresholds import (
    FAIL,
    PASS,
    overall_verdict,
)
from bench.results.schema import (
    IDENTITY_DOCUMENT,
    IdentityEmbedPairRecord,
    IdentityRerankPairRecord,
    IdentityVerdict,
)


@dataclass
class BatchInvariance:
    """One embedding endpoint: a text alone vs the same text inside a batch."""

    texts: int
    min_cosine: float
    threshold: float
    verdict: IdentityVerdict
    seconds: float


@dataclass
class TopNCheck:
    """One reranker: were no more than `top_n` results returned when asked."""

    queries: int
    top_n_requested: int
    top_n_returned: int
    top_n_honoured: bool


@dataclass
class IdentityTimings:
    total_s: float = 0.0
    endpoint_s: dict[str, float] = field(default_factory=dict)  # time spent waiting on each endpoint
    diagnosis_s: float = 0.0  # probing failed pairs
    # everything but waiting on endpoints and probing failed pairs (tokenizing, comparing, neighbours, report)
    suite_s: float = 0.0


@dataclass
class IdentityResult:
    endpoints: list[NamedEndpoint]
    source: str
    texts: int
    queries: int
    token_lengths: str  # "tokenizer <path>" or "words (no tokenizer)"
    embed_pairs: list[IdentityEmbedPairRecord]
    batch_invariance: dict[str, BatchInvariance]
    rerankers: dict[str, TopNCheck]
    rerank_pairs: list[IdentityRerankPairRecord]
    timings: IdentityTimings = field(default_factory=IdentityTimings)

    @property
    def verdict(self) -> IdentityVerdict:
        return overall_verdict(
            [p.verdict for p in self.embed_pairs]
            + [p.verdict for p in self.rerank_pairs]
            + [b.verdict for b in self.batch_invariance.values()]
            + [PASS if r.top_n_honoured else FAIL for r in self.rerankers.values()]
        )

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def to_dict(self) -> dict[str, object]:
        """The JSON document of `--out FILE.json`."""
        return {
            "schema": IDENTITY_DOCUMENT,
            "version": 1,
            "verdict": self.verdict,
            "source": self.source,
            "texts": self.texts,
            "queries": self.queries,
            "token_lengths": self.token_lengths,
            "endpoints": self.endpoints,
            "thresholds": {p.dtype: {"dtype": p.dtype, **p.thresholds} for p in self.embed_pairs},
            "embed_pairs": [_pair_document(p) for p in self.embed_pairs],
            "batch_invariance": {name: asdict(b) for name, b in self.batch_invariance.items()},
            "rerankers": {name: asdict(r) for name, r in self.rerankers.items()},
            "rerank_pairs": [_pair_document(p) for p in self.rerank_pairs],
            "timings": asdict(self.timings),
        }


def _pair_document(pair: IdentityEmbedPairRecord | IdentityRerankPairRecord) -> dict[str, object]:
    """A pair as the JSON document has it (the document's edge: its record's fields, as `asdict` gives them), less
    thresholds and record; an embedding pair's cosine figures in one `cosine` block where cosine_min stood, a rerank
    pair without its dtype."""
    if isinstance(pair, IdentityRerankPairRecord):
        return {k: v for k, v in asdict(pair).items() if k not in ("dtype", "thresholds", "record")}
    cosine = {"min": pair.cosine_min, "p01": pair.cosine_p01, "mean": pair.cosine_mean}
    return {
        ("cosine" if key == "cosine_min" else key): (cosine if key == "cosine_min" else value)
        for key, value in asdict(pair).items()
        if key not in ("cosine_p01", "cosine_mean", "thresholds", "record")
    }
