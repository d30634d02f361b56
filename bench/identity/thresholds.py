"""Pass/fail thresholds per dtype (docs/endpoints.md explains each number).

The published anchor (embed-parity) passes 16-bit serving at mean cosine >= 0.999 and min >= 0.990; the
16-bit rows here use it. Two fp32 engines running the same weights agree to ~1e-7 (infinity vs
sentence-transformers, measured), so fp32 is held 100x stricter: still far above float noise, far
below what truncation, stripped whitespace or a missing prefix cost (cosine 0.5-0.99).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from bench.core.errors import UserError
from bench.results.schema import IdentityVerdict


@dataclass(frozen=True)
class Thresholds:
    dtype: str
    min_cosine: float  # every text
    mean_cosine: float
    max_norm_diff: float  # |norm_a - norm_b| for any text: dot-product search sees norms
    min_top10_overlap: float  # mean share of a query's top-10 neighbours both sides agree on
    batch_min_cosine: float  # a text alone vs the same text inside a batch, same endpoint
    max_score_diff: float  # rerank: |score_a - score_b|, any pair
    min_kendall_tau: float  # rerank: mean over queries of the order's Kendall tau

    def to_dict(self) -> dict[str, float | str]:
        return asdict(self)

    def limits(self) -> dict[str, float]:
        """The numbers alone (a pair record names its dtype apart)."""
        return {k: v for k, v in asdict(self).items() if k != "dtype"}


THRESHOLDS: dict[str, Thresholds] = {
    "float32": Thresholds("float32", 0.9999, 0.99999, 1e-3, 0.95, 0.9999, 1e-4, 0.99),
    "float16": Thresholds("float16", 0.990, 0.999, 1e-2, 0.8, 0.999, 1e-2, 0.9),
    "bfloat16": Thresholds("bfloat16", 0.990, 0.999, 2e-2, 0.8, 0.999, 2e-2, 0.9),
    "int8": Thresholds("int8", 0.95, 0.99, 5e-2, 0.7, 0.99, 5e-2, 0.8),
}
PASS, FAIL, INSUFFICIENT = IdentityVerdict.PASS, IdentityVerdict.FAIL, IdentityVerdict.INSUFFICIENT


def overall_verdict(verdicts: list[IdentityVerdict]) -> IdentityVerdict:
    """Any failure fails; otherwise a check without enough data to judge is not a pass either."""
    return FAIL if FAIL in verdicts else INSUFFICIENT if INSUFFICIENT in verdicts else PASS


def judged(failures: list[str], insufficient: list[str]) -> IdentityVerdict:
    """A compared pair's verdict: any failure fails; a check without enough data to judge is not a pass."""
    return FAIL if failures else INSUFFICIENT if insufficient else PASS


_ALIASES = {
    "fp32": "float32",
    "f32": "float32",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
}
_PRECISION = ["int8", "bfloat16", "float16", "float32"]  # least precise first


def normalise_dtype(name: str) -> str:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in THRESHOLDS:
        raise UserError(f"dtype {name!r}: unknown (known: {', '.join(THRESHOLDS)})")
    return key


def pair_dtype(a: str | None, b: str | None, default: str = "float32") -> str:
    """The least precise dtype the two endpoints report; `default` when neither says."""
    known = [normalise_dtype(d) for d in (a, b) if d and d.lower() in {*THRESHOLDS, *_ALIASES}]
    if not known:
        return default
    return min(known, key=_PRECISION.index)
