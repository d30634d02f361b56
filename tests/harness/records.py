"""Results records a test builds by hand: a run's header, a target's record and the end, with the fields a
test does not care about set to plain defaults."""

from __future__ import annotations

from typing import Any

from bench.results.schema import (
    DirectIngest,
    EndpointCalls,
    EndRecord,
    IngestPointRecord,
    IngestStatus,
    IngestSummaryRecord,
    RunHeader,
    TargetRecord,
)

CREATED = "2026-01-01T00:00:00+00:00"
FINISHED = "2026-01-01T00:00:01+00:00"


def run_header(command: str = "quality", **fields: Any) -> RunHeader:
    """A header stamped CREATED by ragbench version `test`; `fields` as RunHeader takes them."""
    return RunHeader(**{"command": command, "created": CREATED, "ragbench_version": "test", **fields})


def target_record(name: str, **fields: Any) -> TargetRecord:
    """An `ok` target of spec `name` with no timings, costs or warnings; `fields` replace those defaults."""
    defaults: dict[str, Any] = {
        "name": name,
        "spec": name,
        "status": "ok",
        "config": {},
        "index_seconds": 0.0,
        "search_seconds": 0.0,
        "queries": 0,
        "errors": 0,
        "empty": 0,
        "latency_ms": {},
        "cost": {},
        "warnings": {},
        "scores_replaced": False,
        "run_file": f"runs/{name}.trec",
    }
    return TargetRecord(**{**defaults, **fields})


def end_record(status: str = "complete") -> EndRecord:
    return EndRecord(status=status, finished=FINISHED)


def endpoint_calls(**fields: Any) -> EndpointCalls:
    """10 embedding calls of 4 texts each, all answered ok, in 2 s; `fields` replace those figures."""
    defaults: dict[str, Any] = {
        "calls": 10,
        "by_status": {"ok": 10},
        "texts": 40,
        "texts_per_call_mean": 4.0,
        "texts_per_call_max": 4,
        "retries": 0,
        "seconds": 2.0,
        "busy_fraction": 0.5,
        "peak_in_flight": 2,
        "upstream_seconds": 1.5,
        "calls_with_upstream_time": 10,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    return EndpointCalls(**{**defaults, **fields})


def direct_ingest(**fields: Any) -> DirectIngest:
    defaults: dict[str, Any] = {
        "route": "embedding",
        "calls": 10,
        "failed_calls": 0,
        "concurrency": 2,
        "seconds": 1.0,
        "docs_per_s": 20.0,
    }
    return DirectIngest(**{**defaults, **fields})


def ingest_point(target: str, label: str, **fields: Any) -> IngestPointRecord:
    """An `ok` Open WebUI combination: 20 documents in 2 s, 10 embedding calls, direct twice as fast."""
    defaults: dict[str, Any] = {
        "target": target,
        "kind": "openwebui",
        "label": label,
        "settings": {},
        "status": IngestStatus.OK,
        "documents": 20,
        "processed": 20,
        "failed": 0,
        "lost": 0,
        "seconds": 2.0,
        "docs_per_s": 10.0,
        "chunks": 40,
        "chunks_per_s": 20.0,
        "doc_latency_ms": {"p50": 150.0, "n": 20},
        "upload_concurrency": 4,
        "calls": {"embedding": endpoint_calls()},
        "direct": direct_ingest(),
        "app_over_direct": 0.5,
    }
    return IngestPointRecord(**{**defaults, **fields})


def ingest_summary(target: str, recommended: str | None, reason: str) -> IngestSummaryRecord:
    return IngestSummaryRecord(target=target, recommended=recommended, reason=reason)
