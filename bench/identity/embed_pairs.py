"""Embedding endpoints compared: each pair's figures, verdict and named causes, and each endpoint's batch invariance."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bench.datasets.texts import Tokenizer
from bench.endpoints.base import Embedder
from bench.identity import diagnose
from bench.identity.inputs import IdentityInput
from bench.identity.outcome import BatchInvariance, IdentityResult
from bench.identity.thresholds import (
    FAIL,
    INSUFFICIENT,
    PASS,
    THRESHOLDS,
    Thresholds,
    judged,
    pair_dtype,
)
from bench.identity.vectors import TOP_K, EndpointVectors, PairVectors, batch_invariance, stream_vectors, top10_overlap
from bench.results.schema import (
    Cause,
    IdentityEmbedPairRecord,
    NormRange,
    TokenLengthBucket,
    WorstText,
)

BATCH_SAMPLE = 8


WORST = 5


BUCKETS = ((0, 128), (129, 256), (257, 512), (513, None))


# With n candidates, two top-10 lists share at least 20 - n ids whatever the vectors: below 2 * TOP_K the
# neighbour check cannot fail, so it has too little data to judge (with 10 or fewer texts it is always 1.0).
MIN_NEIGHBOUR_CANDIDATES = 2 * TOP_K


def _buckets(cosine: np.ndarray, lengths: np.ndarray, minimum: float) -> list[TokenLengthBucket]:
    rows = []
    for low, high in BUCKETS:
        mask = (lengths >= low) & ((lengths <= high) if high is not None else True)
        if not mask.any():
            continue
        values = cosine[mask]
        rows.append(
            TokenLengthBucket(
                tokens=f"{low}-{high}" if high is not None else f"{low}+",
                texts=int(mask.sum()),
                cosine_mean=float(values.mean()),
                cosine_min=float(values.min()),
                failing=int((values < minimum).sum()),
            )
        )
    return rows


def _sample_by_length(lengths: np.ndarray, k: int) -> list[int]:
    """Texts spread from shortest to longest: padding and batching effects grow with length spread."""
    order = np.argsort(lengths, kind="stable")
    return sorted({int(order[int(i)]) for i in np.linspace(0, len(order) - 1, num=min(k, len(order)))})


@dataclass(frozen=True)
class EmbedJob:
    """What the embedding comparison needs: `pairs` (names of `embedders`) to compare; `dtypes`: what each
    endpoint reports; `forced`: --dtype; `lengths`: each text's length in tokens (or words without a tokenizer)."""

    embedders: list[Embedder]
    pairs: list[tuple[str, str]]
    dtypes: dict[str, str | None]
    inputs: IdentityInput
    lengths: np.ndarray
    tokenizer: Tokenizer | None
    forced: str | None
    chunk_size: int
    advance: Callable[[int], None]
    by_name: dict[str, Embedder] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {e.name: e for e in self.embedders})


def embed_identity(job: EmbedJob, report: IdentityResult, endpoint_s: dict[str, float]) -> float:
    """Fill the embedding part of `report` for the job's pairs; return the seconds spent diagnosing failed pairs."""
    embedders, inputs, lengths, forced, dtypes = job.embedders, job.inputs, job.lengths, job.forced, job.dtypes
    sample = _sample_by_length(lengths, BATCH_SAMPLE)
    run = stream_vectors(embedders, inputs, job.pairs, sample, job.chunk_size, job.advance)
    diagnosis_s = 0.0
    for pair in run.pairs:
        a, b = run.endpoints[pair.a], run.endpoints[pair.b]
        thresholds = THRESHOLDS[forced or pair_dtype(dtypes[pair.a], dtypes[pair.b])]
        candidates = len(inputs.texts) - (1 if inputs.query_self_index is not None else 0)
        result = _embed_pair(pair, a, b, thresholds, lengths, inputs.texts, candidates)
        if result.failures:
            started = time.perf_counter()
            result.causes = _embed_causes(result, pair, a, b, job, thresholds)
            diagnosis_s += time.perf_counter() - started
        report.embed_pairs.append(result)
    for embedder in embedders:
        record = run.endpoints[embedder.name]
        before = record.seconds
        found = batch_invariance(embedder, inputs.texts, record)
        thresholds = THRESHOLDS[forced or pair_dtype(dtypes[embedder.name], None)]
        worst = min(found.values()) if found else 1.0
        # One text is a batch of one: "alone" and "inside a batch" are the same request.
        verdict = INSUFFICIENT if len(inputs.texts) < 2 else PASS if worst >= thresholds.batch_min_cosine else FAIL
        report.batch_invariance[embedder.name] = BatchInvariance(
            len(found), worst, thresholds.batch_min_cosine, verdict, record.seconds - before
        )
    for name, record in run.endpoints.items():
        endpoint_s[name] = record.seconds
    return diagnosis_s


def _embed_pair(
    pair: PairVectors,
    a: EndpointVectors,
    b: EndpointVectors,
    thresholds: Thresholds,
    lengths: np.ndarray,
    texts: list[str],
    candidates: int,
) -> IdentityEmbedPairRecord:
    cosine = pair.cosine
    order = np.argsort(cosine, kind="stable")[:WORST]
    assert a.topk is not None and b.topk is not None  # stream_vectors sets both before any text
    overlap = top10_overlap(a.topk, b.topk) if candidates >= MIN_NEIGHBOUR_CANDIDATES else None
    result = IdentityEmbedPairRecord(
        a=pair.a,
        b=pair.b,
        dtype=thresholds.dtype,
        thresholds=thresholds.limits(),
        texts=len(cosine),
        dims={pair.a: a.dim, pair.b: b.dim},
        cosine_min=float(cosine.min()),
        cosine_p01=float(np.percentile(cosine, 1)),
        cosine_mean=float(cosine.mean()),
        max_abs_diff=float(pair.max_abs.max()),
        max_norm_diff=float(np.abs(a.norms - b.norms).max()),
        norms={e.name: NormRange(float(e.norms.min()), float(e.norms.mean()), float(e.norms.max())) for e in (a, b)},
        top10_overlap=overlap,
        by_token_length=_buckets(cosine, lengths, thresholds.min_cosine),
        worst=[
            WorstText(int(i), int(lengths[i]), float(cosine[i]), float(pair.max_abs[i]), texts[i][:160]) for i in order
        ],
        verdict=PASS,
        failures=[],
        insufficient=[],
        causes=[],
    )
    _judge_embed_pair(result, a.dim, b.dim, thresholds, candidates)
    return result


def _judge_embed_pair(
    result: IdentityEmbedPairRecord, dim_a: int, dim_b: int, thresholds: Thresholds, candidates: int
) -> None:
    """The pair's failures, checks without enough data, and its verdict from them."""
    if dim_a != dim_b:
        result.failures.append(f"dimensions differ: {dim_a} vs {dim_b}")
    if result.cosine_min < thresholds.min_cosine:
        result.failures.append(f"min cosine {result.cosine_min:.6f} < {thresholds.min_cosine}")
    if result.cosine_mean < thresholds.mean_cosine:
        result.failures.append(f"mean cosine {result.cosine_mean:.6f} < {thresholds.mean_cosine}")
    if result.max_norm_diff > thresholds.max_norm_diff:
        result.failures.append(f"norms differ by up to {result.max_norm_diff:.3g} > {thresholds.max_norm_diff:g}")
    if result.top10_overlap is None:
        result.insufficient.append(
            f"top-10 neighbour overlap: {candidates} candidate texts per query, "
            f"the check needs at least {MIN_NEIGHBOUR_CANDIDATES}"
        )
    elif result.top10_overlap < thresholds.min_top10_overlap:
        result.failures.append(f"top-10 neighbour overlap {result.top10_overlap:.3f} < {thresholds.min_top10_overlap}")
    result.verdict = judged(result.failures, result.insufficient)


def _embed_causes(
    result: IdentityEmbedPairRecord,
    pair: PairVectors,
    a: EndpointVectors,
    b: EndpointVectors,
    job: EmbedJob,
    thresholds: Thresholds,
) -> list[Cause]:
    lengths, tokenizer = job.lengths, job.tokenizer
    if a.dim != b.dim:
        return diagnose.dimension_causes(a, b, pair, thresholds)
    causes = diagnose.norm_causes(a, b, thresholds)
    failing = pair.cosine < thresholds.min_cosine
    if not failing.any() and result.cosine_mean >= thresholds.mean_cosine:
        return causes or [diagnose.residual_cause(pair.cosine)]
    worst = [int(i) for i in np.argsort(pair.cosine, kind="stable")[: diagnose.PROBE_TEXTS]]
    points = diagnose.truncation_points(pair.cosine, lengths, thresholds)
    probed = diagnose.probe_causes(
        job.by_name[pair.a], job.by_name[pair.b], job.inputs.texts, worst, thresholds, tokenizer, points
    )
    if probed:
        return causes + probed
    suspected = diagnose.length_signature(pair.cosine, lengths, thresholds, "tokens" if tokenizer else "words")
    return [*causes, suspected or diagnose.residual_cause(pair.cosine)]
