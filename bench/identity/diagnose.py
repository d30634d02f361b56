"""Name the cause when two serving paths disagree.

Some causes show in the figures alone (norms, dimensions, where in the length range differences start);
the rest are confirmed by a probe: the worst texts are changed the way a suspected server would change
them (whitespace stripped, a prefix added, input cut at N tokens) and sent through the *other* endpoint.
When that reproduces the first endpoint's vectors, the cause is proven, not guessed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from bench.datasets.texts import Tokenizer
from bench.endpoints.base import Embedder
from bench.identity.thresholds import Thresholds
from bench.identity.vectors import EndpointVectors, PairVectors, unit
from bench.results.schema import Cause

PROBE_TEXTS = 5
TRUNCATION_POINTS = (64, 128, 256, 384, 512)
PREFIXES = ("query: ", "passage: ", "search_query: ", "search_document: ")
WHITESPACE: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("leading and trailing whitespace", str.strip),
    ("line breaks", lambda t: t.replace("\r", "").replace("\n", "")),
    ("runs of whitespace", lambda t: " ".join(t.split())),
)


def norm_causes(a: EndpointVectors, b: EndpointVectors, thresholds: Thresholds) -> list[Cause]:
    """One side normalises and the other does not: cosine is blind to it, dot-product search is not."""
    off = {e.name: float(np.abs(e.norms - 1.0).max()) if len(e.norms) else 0.0 for e in (a, b)}
    causes = []
    for this, other in ((a, b), (b, a)):
        if off[this.name] > thresholds.max_norm_diff and off[other.name] <= thresholds.max_norm_diff:
            causes.append(
                Cause(
                    "not_normalised",
                    this.name,
                    f"{this.name} returns vectors of norm {this.norms.min():.3g}..{this.norms.max():.3g}; "
                    f"{other.name} returns unit vectors",
                    f"normalise on {this.name} (TEI: normalize=true; sentence-transformers: a Normalize module)",
                )
            )
    return causes


def dimension_causes(a: EndpointVectors, b: EndpointVectors, pair: PairVectors, thresholds: Thresholds) -> list[Cause]:
    small, large = (a, b) if a.dim < b.dim else (b, a)
    if float(np.mean(pair.cosine)) < thresholds.mean_cosine:
        return [
            Cause(
                "different_model",
                None,
                f"dimensions differ ({a.name}: {a.dim}, {b.name}: {b.dim}) and the shared leading dimensions disagree "
                f"(mean cosine {np.mean(pair.cosine):.4f})",
                "serve the same model on both paths",
            )
        ]
    if float(np.abs(small.norms - 1.0).max()) > thresholds.max_norm_diff:
        return [
            Cause(
                "dimensions_cut_not_renormalised",
                small.name,
                f"{small.name} returns the first {small.dim} of {large.dim} dimensions without re-normalising "
                f"(norms {small.norms.min():.3f}..{small.norms.max():.3f})",
                f"re-normalise after `dimensions` on {small.name}, or request the full {large.dim}",
            )
        ]
    return [
        Cause(
            "dimensions_cut",
            small.name,
            f"{small.name} returns the first {small.dim} of {large.dim} dimensions (re-normalised)",
            "request the same `dimensions` on both paths",
        )
    ]


def _cosines(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.shape != y.shape:
        return np.zeros(len(x), dtype=np.float32)
    cosines: np.ndarray = np.einsum("ij,ij->i", unit(x), unit(y))
    return cosines


def truncation_points(cosine: np.ndarray, lengths: np.ndarray, thresholds: Thresholds) -> list[int]:
    """Limits N that fit the figures: every text of N tokens or fewer agrees, the shortest failing text is longer."""
    failing = cosine < thresholds.min_cosine
    if not failing.any():
        return []
    shortest_failing = int(lengths[failing].min())
    agreeing_below = lengths[~failing & (lengths < shortest_failing)]
    floor = int(agreeing_below.max()) if len(agreeing_below) else 0
    return [p for p in TRUNCATION_POINTS if floor <= p < shortest_failing]


def probe_causes(
    a: Embedder,
    b: Embedder,
    texts: list[str],
    worst: list[int],
    thresholds: Thresholds,
    tokenizer: Tokenizer | None,
    points: list[int],
) -> list[Cause]:
    """Reproduce one side's vectors by changing the texts sent to the other side."""
    sample = [texts[i] for i in worst[:PROBE_TEXTS]]
    if not sample:
        return []
    originals = {a.name: a.embed(sample).vectors, b.name: b.embed(sample).vectors}

    def reproduces(sender: Embedder, target: str, variant: list[str]) -> bool:
        if variant == sample:
            return False  # the change does nothing to these texts: no evidence either way
        got = sender.embed(variant).vectors
        return float(_cosines(got, originals[target]).min()) >= thresholds.min_cosine

    for sender, other in ((a, b), (b, a)):
        # `other` is the side that changes its input: sending the changed texts to `sender` reproduces it.
        cause = _probed_cause(
            sender, other, sample, tokenizer, points, functools.partial(reproduces, sender, other.name)
        )
        if cause is not None:
            return [cause]
    return []


def _probed_cause(
    sender: Embedder,
    other: Embedder,
    sample: list[str],
    tokenizer: Tokenizer | None,
    points: list[int],
    reproduces: Callable[[list[str]], bool],
) -> Cause | None:
    """The first change to the texts (truncation, white space, a prefix) with which `sender` gives `other`'s vectors."""
    if tokenizer is not None:
        for point in points:
            if reproduces([tokenizer.truncate(t, point) for t in sample]):
                return Cause(
                    "truncated",
                    other.name,
                    f"{other.name} reads only the first {point} tokens of each input; {sender.name} reads more",
                    f"raise the input limit on {other.name} (TEI: --max-input-length / truncate) "
                    f"or cut inputs to {point} tokens on every path",
                )
    for what, change in WHITESPACE:
        if reproduces([change(t) for t in sample]):
            return Cause(
                "whitespace_stripped",
                other.name,
                f"{other.name} removes {what} before encoding",
                f"send texts unchanged through {other.name} (or apply the same cleaning on every path)",
            )
    for prefix in PREFIXES:
        if reproduces([prefix + t for t in sample]):
            return Cause(
                "prefix_missing",
                sender.name,
                f"{other.name} encodes texts with the prefix {prefix!r}; {sender.name} without it",
                f"add the prefix {prefix!r} on {sender.name} (or remove it on {other.name})",
            )
    return None


def length_signature(
    cosine: np.ndarray, lengths: np.ndarray, thresholds: Thresholds, unit: str = "tokens"
) -> Cause | None:
    """Differences only above some input length: truncation on one side, suspected (no probe confirmed it)."""
    failing = cosine < thresholds.min_cosine
    if not failing.any() or failing.all():
        return None
    shortest = int(lengths[failing].min())
    longer = lengths >= shortest
    if shortest > 16 and failing[longer].mean() >= 0.8 and not failing[lengths < shortest].any():
        return Cause(
            "truncated_suspected",
            None,
            f"differences only in texts of {shortest}+ {unit}: one side truncates its input",
            "compare each path's max input length (TEI /info max_input_length, sentence-transformers max_seq_length)",
        )
    return None


def residual_cause(cosine: np.ndarray) -> Cause:
    mean = float(np.mean(cosine))
    if mean < 0.99:
        return Cause(
            "different_model",
            None,
            f"vectors differ across all input lengths (mean cosine {mean:.4f}): a different model, revision or pooling",
            "check the model id and revision each path serves",
        )
    return Cause(
        "numeric",
        None,
        f"small differences (mean cosine {mean:.6f}) that match no known signature: dtype, kernels or batching",
        "compare dtypes (TEI /info model_dtype) or loosen --dtype",
    )
