"""A combination's `ingest_point` record from what was measured: the documents' outcomes, the meter's calls, the
direct resend."""

from __future__ import annotations

from dataclasses import dataclass

from bench.core.percentiles import percentiles
from bench.endpoints.meter_calls import CallRecord, request_texts
from bench.ingest.calls import by_route
from bench.results.schema import DirectIngest, IngestPointRecord, IngestStatus
from bench.results.schema.ingest import Settings
from bench.targets.base import TargetKind, TargetSpec

MIN_FOR_P99 = 100  # a p99 of fewer documents is their maximum, not a percentile
EMBEDDING_ROUTE = "embedding"


@dataclass(frozen=True)
class Combination:
    """Which measurement a point is: the target (as `target_name` calls it), its kind (openwebui | lightrag), the
    settings combination as the server read it back and its label."""

    target: str
    kind: TargetKind
    settings: Settings
    label: str


@dataclass(frozen=True)
class DocsOutcome:
    """The documents' outcome: how many were sent, failed doc -> why, doc ids lost, wall seconds and each
    processed document's seconds."""

    documents: int
    failed: dict[str, str]
    lost: list[str]
    seconds: float
    per_doc_s: list[float]


def target_name(spec: TargetSpec) -> str:
    """What results, reports and `compare` call an ingest target: its `NAME=` where one is given, so that a
    baseline and a current run against different URLs pair; else the spec as written (credentials masked)."""
    return spec.given_name or spec.public_text


def doc_latency_ms(seconds: list[float]) -> dict[str, float]:
    """p50 (and p99 from MIN_FOR_P99 documents) of the per-document times, with their count `n`."""
    if not seconds:
        return {"n": 0}
    names = ("p50", "p99") if len(seconds) >= MIN_FOR_P99 else ("p50",)
    return {**percentiles([s * 1000 for s in seconds], names), "n": len(seconds)}


def distinct_texts(calls: list[CallRecord], not_chunks: frozenset[str] = frozenset()) -> int | None:
    """Distinct texts the calls carried (the app's chunks, each counted once however often it was embedded), texts
    equal but for whitespace as one: Open WebUI 0.12.4 embeds each chunk twice (file, then knowledge base) and, for a
    document with line breaks, the two texts differ in whitespace only (measured, docs/grow.md). `not_chunks`: texts
    the app embeds that are no chunk. None where no call kept its request."""
    kept = [c.request.body for c in calls if c.request is not None and c.status is not None and c.status < 400]
    if not kept:
        return None
    texts = {_spaced(t) for body in kept for t in request_texts(body) or []}
    return len(texts - {_spaced(t) for t in not_chunks})


def _spaced(text: str) -> str:
    return " ".join(text.split())


def point_record(
    combination: Combination,
    outcome: DocsOutcome,
    calls: list[CallRecord] | None,
    direct: DirectIngest | None,
    container: str | None,
    concurrency: int,
    not_chunks: frozenset[str] = frozenset(),
) -> IngestPointRecord:
    """`container`: where the target kept the documents (a knowledge base, a workspace); `not_chunks`: texts the
    app embedded that are no chunk (Open WebUI's knowledge base's own name and description)."""
    documents, failed, lost, seconds = outcome.documents, outcome.failed, outcome.lost, outcome.seconds
    processed = documents - len(failed) - len(lost)
    embedded = [c for c in calls or [] if c.route == EMBEDDING_ROUTE]
    chunks = distinct_texts(embedded, not_chunks)
    docs_per_s = processed / seconds if seconds > 0 and processed else None
    ratio = None
    if direct is not None and direct.docs_per_s and docs_per_s:
        ratio = docs_per_s / direct.docs_per_s
    examples = dict(list(failed.items())[:10]) | dict.fromkeys(lost[:10], "not listed as processed afterwards")
    return IngestPointRecord(
        target=combination.target,
        kind=combination.kind,
        label=combination.label,
        settings=combination.settings,
        status=IngestStatus.LOST if failed or lost else IngestStatus.OK,
        documents=documents,
        processed=processed,
        failed=len(failed),
        lost=len(lost),
        seconds=seconds,
        docs_per_s=docs_per_s,
        chunks=chunks,
        chunks_per_s=chunks / seconds if chunks is not None and seconds > 0 else None,
        doc_latency_ms=doc_latency_ms(outcome.per_doc_s),
        upload_concurrency=concurrency,
        calls=by_route(calls, seconds) if calls is not None else {},
        direct=direct,
        app_over_direct=ratio,
        failed_examples=examples,
        container=container,
    )


def failed_record(combination: Combination, error: str) -> IngestPointRecord:
    """A combination that could not be measured (the server refused its settings, or went away)."""
    return IngestPointRecord(
        target=combination.target,
        kind=combination.kind,
        label=combination.label,
        settings=combination.settings,
        status=IngestStatus.FAILED,
        documents=0,
        processed=0,
        failed=0,
        lost=0,
        seconds=0.0,
        docs_per_s=None,
        chunks=None,
        chunks_per_s=None,
        doc_latency_ms={},
        upload_concurrency=0,
        calls={},
        direct=None,
        app_over_direct=None,
        error=error,
    )
