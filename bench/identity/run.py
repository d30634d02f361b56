"""`run_identity`: the same texts through every endpoint, a verdict and named causes per pair."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bench.core.errors import UserError
from bench.datasets.texts import Tokenizer, word_counts
from bench.endpoints.base import Embedder, EndpointKind, NamedEndpoint, Reranker
from bench.endpoints.spec import EndpointSpec, open_endpoint
from bench.identity.embed_pairs import EmbedJob, embed_identity
from bench.identity.inputs import IdentityInput
from bench.identity.outcome import IdentityResult, IdentityTimings, TopNCheck
from bench.identity.scores import TOP_N_PROBE, compare_rerankers, rerank_tasks, run_reranker
from bench.identity.thresholds import (
    THRESHOLDS,
    normalise_dtype,
    pair_dtype,
)

T = TypeVar("T")
F = TypeVar("F")


@dataclass
class IdentityRequest:
    specs: list[EndpointSpec]
    inputs: IdentityInput
    reference: str | None = None  # compare every endpoint with this one only (default: every pair)
    dtype: str | None = None  # force thresholds; default from what the endpoints report, else float32
    tokenizer: Path | None = None
    chunk_size: int = 1024
    max_time_s: float | None = None  # every request within this of the start (identity --max-time)


def _safe(call: Callable[[], T], fallback: F) -> T | F:
    """What `call` answers, or `fallback` where the endpoint refuses (a describe or dtype it cannot give)."""
    try:
        return call()
    except UserError:
        return fallback


def _named(name: str, endpoint: Embedder | Reranker) -> NamedEndpoint:
    """The endpoint's description under its spec's name; its kind alone where it cannot describe itself."""
    known: NamedEndpoint = {"name": name}
    kind = getattr(endpoint, "kind", None)
    if isinstance(kind, EndpointKind):
        known["kind"] = kind
    return {**known, **_safe(endpoint.describe, known)}


def _pairs(names: list[str], reference: str | None) -> list[tuple[str, str]]:
    if reference is None:
        return list(itertools.combinations(names, 2))
    return [(reference, n) for n in names if n != reference]


def _tokenizer(request: IdentityRequest) -> Tokenizer | None:
    if request.tokenizer is not None:
        return Tokenizer(request.tokenizer)
    for spec in request.specs:
        if spec.url is None:  # an in-process reference endpoint: its model folder may hold the tokenizer
            from bench.endpoints.reference import resolve_model

            path = resolve_model(spec.params.get("model") or None)
            if (path / "tokenizer.json").is_file():
                return Tokenizer(path)
    return None


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
        names = [e.name for e in embedders]
        pairs = _pairs(names, request.reference if request.reference in names else None)
        dtypes = {e.name: _safe(e.dtype, None) for e in embedders}
        job = EmbedJob(embedders, pairs, dtypes, inputs, lengths, tokenizer, forced, request.chunk_size, advance)
        diagnosis_s = embed_identity(job, report, endpoint_s)
    if rerankers:
        _rerank_identity(request, rerankers, inputs, forced, report, endpoint_s)
    report.endpoints = [_named(n, e) for n, e in endpoints.items()]
    total = time.perf_counter() - started
    report.timings = IdentityTimings(total, endpoint_s, diagnosis_s, total - sum(endpoint_s.values()) - diagnosis_s)
    return report


def _rerank_identity(
    request: IdentityRequest,
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
