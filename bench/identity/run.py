"""`run_identity`: the same texts through every endpoint, a verdict and named causes per pair."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import UserError
from bench.datasets.texts import Tokenizer, word_counts
from bench.endpoints.base import Embedder, Reranker
from bench.endpoints.spec import EndpointSpec, open_endpoint
from bench.identity import diagnose
from bench.identity.inputs import IdentityInput
from bench.identity.scores import TOP_N_PROBE, compare_rerankers, rerank_tasks, run_reranker
from bench.identity.thresholds import (
    FAIL,
    INSUFFICIENT,
    PASS,
    THRESHOLDS,
    Thresholds,
    judged,
    normalise_dtype,
    overall_verdict,
    pair_dtype,
)
from bench.identity.vectors import TOP_K, batch_invariance, stream_vectors, top10_overlap
from bench.results.schema import (
    IDENTITY_DOCUMENT,
    Cause,
    IdentityEmbedPairRecord,
    IdentityRerankPairRecord,
    NormRange,
    TokenLengthBucket,
    Verdict,
    WorstText,
)

BATCH_SAMPLE = 8
WORST = 5
BUCKETS = ((0, 128), (129, 256), (257, 512), (513, None))
# With n candidates, two top-10 lists share at least 20 - n ids whatever the vectors: below 2 * TOP_K the
# neighbour check cannot fail, so it has too little data to judge (with 10 or fewer texts it is always 1.0).
MIN_NEIGHBOUR_CANDIDATES = 2 * TOP_K


@dataclass
class IdentityRequest:
    specs: list[EndpointSpec]
    inputs: IdentityInput
    reference: str | None = None  # compare every endpoint with this one only (default: every pair)
    dtype: str | None = None  # force thresholds; default from what the endpoints report, else float32
    tokenizer: Path | None = None
    chunk_size: int = 1024


@dataclass
class BatchInvariance:
    """One embedding endpoint: a text alone vs the same text inside a batch."""

    texts: int
    min_cosine: float
    threshold: float
    verdict: Verdict
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
    endpoints: list[dict[str, object]]
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
    def verdict(self) -> Verdict:
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
        """The JSON document (`--out FILE.json`, the format before results.jsonl)."""
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
            "embed_pairs": [_embed_document(p) for p in self.embed_pairs],
            "batch_invariance": {name: asdict(b) for name, b in self.batch_invariance.items()},
            "rerankers": {name: asdict(r) for name, r in self.rerankers.items()},
            "rerank_pairs": [_rerank_document(p) for p in self.rerank_pairs],
            "timings": asdict(self.timings),
        }


def _embed_document(pair: IdentityEmbedPairRecord) -> dict[str, Any]:
    """An embedding pair as the JSON document has it: the cosine figures in one block, no thresholds or record."""
    document: dict[str, Any] = {}
    for key, value in asdict(pair).items():
        if key == "cosine_min":
            document["cosine"] = {"min": pair.cosine_min, "p01": pair.cosine_p01, "mean": pair.cosine_mean}
        elif key not in ("cosine_p01", "cosine_mean", "thresholds", "record"):
            document[key] = value
    return document


def _rerank_document(pair: IdentityRerankPairRecord) -> dict[str, object]:
    """A rerank pair as the JSON document has it (its format before results.jsonl): no dtype, thresholds, record."""
    return {k: v for k, v in asdict(pair).items() if k not in ("dtype", "thresholds", "record")}


def _safe(call, fallback):
    try:
        return call()
    except UserError:
        return fallback


def _pairs(names: list[str], reference: str | None) -> list[tuple[str, str]]:
    if reference is None:
        return list(itertools.combinations(names, 2))
    return [(reference, n) for n in names if n != reference]


def _tokenizer(request: IdentityRequest) -> Tokenizer | None:
    if request.tokenizer is not None:
        return Tokenizer(request.tokenizer)
    for spec in request.specs:
        if spec.kind in ("reference", "reference-rerank"):
            from bench.endpoints.reference import resolve_model

            path = resolve_model(spec.params.get("model") or None)
            if (path / "tokenizer.json").is_file():
                return Tokenizer(path)
    return None


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


def check_endpoints(reranks: list[tuple[str, bool]], reference: str | None, dtype: str | None) -> None:
    """What identity needs of its endpoints (name, is a reranker) and options, checked before any is opened."""
    names = [name for name, _ in reranks]
    if len(set(names)) != len(names):
        raise UserError(f"endpoint names must be unique: {', '.join(names)}")
    if reference is not None and reference not in names:
        raise UserError(f"--reference {reference}: no endpoint of that name (have: {', '.join(names)})")
    if dtype:
        normalise_dtype(dtype)
    for rerank in (False, True):
        alike = [name for name, is_rerank in reranks if is_rerank == rerank]
        if len(alike) == 1:
            raise UserError(f"endpoint {alike[0]}: identity needs at least two endpoints of the same type to compare")


def run_identity(request: IdentityRequest, advance: Callable[[int], None] = lambda n: None) -> IdentityResult:
    """Open every endpoint of `request.specs`, compare them, close them."""
    check_endpoints([(s.name, s.is_rerank) for s in request.specs], request.reference, request.dtype)
    endpoints = {s.name: open_endpoint(s) for s in request.specs}
    try:
        return compare_endpoints(endpoints, request, advance)
    finally:
        for endpoint in endpoints.values():
            endpoint.close()


def compare_endpoints(
    endpoints: dict[str, Embedder | Reranker], request: IdentityRequest, advance: Callable[[int], None] = lambda n: None
) -> IdentityResult:
    """Identity over endpoint objects already open (any implementation of the two protocols)."""
    started = time.perf_counter()
    kinds = [(name, isinstance(e, Reranker)) for name, e in endpoints.items()]
    check_endpoints(kinds, request.reference, request.dtype)
    forced = normalise_dtype(request.dtype) if request.dtype else None
    rerankers = [e for e in endpoints.values() if isinstance(e, Reranker)]
    embedders = [e for e in endpoints.values() if not isinstance(e, Reranker)]
    inputs = request.inputs
    tokenizer = _tokenizer(request)
    lengths = tokenizer.lengths(inputs.texts) if tokenizer else word_counts(inputs.texts)
    report = IdentityResult(
        endpoints=[],
        source=inputs.source,
        texts=len(inputs.texts),
        queries=len(inputs.queries),
        token_lengths=f"tokenizer {tokenizer.path}" if tokenizer else "words (no tokenizer)",
        embed_pairs=[],
        batch_invariance={},
        rerankers={},
        rerank_pairs=[],
    )
    endpoint_s: dict[str, float] = {}
    diagnosis_s = 0.0
    if embedders:
        diagnosis_s = _embed_identity(
            request, embedders, inputs, lengths, tokenizer, forced, report, endpoint_s, advance
        )
    if rerankers:
        _rerank_identity(request, rerankers, inputs, forced, report, endpoint_s)
    report.endpoints = [
        {"name": n, **_safe(e.describe, {"kind": getattr(e, "kind", "?")})} for n, e in endpoints.items()
    ]
    total = time.perf_counter() - started
    report.timings = IdentityTimings(total, endpoint_s, diagnosis_s, total - sum(endpoint_s.values()) - diagnosis_s)
    return report


def _embed_identity(
    request,
    embedders: list[Embedder],
    inputs: IdentityInput,
    lengths: np.ndarray,
    tokenizer: Tokenizer | None,
    forced: str | None,
    report: IdentityResult,
    endpoint_s: dict[str, float],
    advance,
) -> float:
    """Fill the embedding part of `report`; return the seconds spent diagnosing failed pairs."""
    by_name = {e.name: e for e in embedders}
    pairs = _pairs(list(by_name), request.reference if request.reference in by_name else None)
    sample = _sample_by_length(lengths, BATCH_SAMPLE)
    run = stream_vectors(embedders, inputs, pairs, sample, request.chunk_size, advance)
    diagnosis_s = 0.0
    dtypes = {e.name: _safe(e.dtype, None) for e in embedders}
    for pair in run.pairs:
        a, b = run.endpoints[pair.a], run.endpoints[pair.b]
        thresholds = THRESHOLDS[forced or pair_dtype(dtypes[pair.a], dtypes[pair.b])]
        candidates = len(inputs.texts) - (1 if inputs.query_self_index is not None else 0)
        result = _embed_pair(pair, a, b, thresholds, lengths, inputs.texts, candidates)
        if result.failures:
            started = time.perf_counter()
            result.causes = _embed_causes(result, pair, a, b, by_name, inputs.texts, lengths, tokenizer, thresholds)
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
    pair, a, b, thresholds: Thresholds, lengths: np.ndarray, texts: list[str], candidates: int
) -> IdentityEmbedPairRecord:
    cosine = pair.cosine
    order = np.argsort(cosine, kind="stable")[:WORST]
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
    pair,
    a,
    b,
    by_name: dict[str, Embedder],
    texts: list[str],
    lengths: np.ndarray,
    tokenizer: Tokenizer | None,
    thresholds: Thresholds,
) -> list[Cause]:
    if a.dim != b.dim:
        return diagnose.dimension_causes(a, b, pair, thresholds)
    causes = diagnose.norm_causes(a, b, thresholds)
    failing = pair.cosine < thresholds.min_cosine
    if not failing.any() and result.cosine_mean >= thresholds.mean_cosine:
        return causes or [diagnose.residual_cause(pair.cosine)]
    worst = [int(i) for i in np.argsort(pair.cosine, kind="stable")[: diagnose.PROBE_TEXTS]]
    points = diagnose.truncation_points(pair.cosine, lengths, thresholds)
    probed = diagnose.probe_causes(by_name[pair.a], by_name[pair.b], texts, worst, thresholds, tokenizer, points)
    if probed:
        return causes + probed
    suspected = diagnose.length_signature(pair.cosine, lengths, thresholds, "tokens" if tokenizer else "words")
    return [*causes, suspected or diagnose.residual_cause(pair.cosine)]


def _rerank_identity(
    request,
    rerankers: list[Reranker],
    inputs: IdentityInput,
    forced: str | None,
    report: IdentityResult,
    endpoint_s: dict[str, float],
) -> None:
    tasks = rerank_tasks(inputs.texts, inputs.queries)
    runs = {r.name: run_reranker(r, tasks) for r in rerankers}
    dtypes = {r.name: _safe(r.dtype, None) for r in rerankers}
    for name, run in runs.items():
        endpoint_s[name] = run.seconds
        report.rerankers[name] = TopNCheck(len(tasks), TOP_N_PROBE, run.top_n_returned, run.top_n_honoured)
    by_name = {r.name: r for r in rerankers}
    for a, b in _pairs(list(by_name), request.reference if request.reference in by_name else None):
        thresholds = THRESHOLDS[forced or pair_dtype(dtypes[a], dtypes[b])]
        report.rerank_pairs.append(compare_rerankers(runs[a], runs[b], thresholds))
