"""Results records a test builds by hand: a run's header, a target's record and the end, with the fields a
test does not care about set to plain defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.grow.answer import summarise
from bench.results.schema import (
    DirectIngest,
    EndpointCalls,
    EndRecord,
    GrowRungRecord,
    IngestPointRecord,
    IngestStatus,
    IngestSummaryRecord,
    RungStatus,
    RunHeader,
    TargetRecord,
)
from bench.results.writer import ResultsWriter
from bench.sizing.slo import parse_slo

GROW_SLO = "p99=50ms"  # the SLO a hand-built grow run states and is summarised under

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


def grow_rung(target: str, rung: int, size: int, p99: float, **fields: Any) -> GrowRungRecord:
    """An `ok` rung of an Open WebUI target: 100 docs added incrementally in 10 s, 20 queries of p99 `p99` (p50 half
    of it), nDCG@10 0.5; `fields` replace those defaults."""
    defaults: dict[str, Any] = {
        "target": target,
        "kind": "openwebui",
        "rung": rung,
        "size": size,
        "unit": "docs",
        "added": 100,
        "ingest_mode": "incremental",
        "status": RungStatus.OK,
        "ingest_seconds": 10.0,
        "docs_per_s": 10.0,
        "queries": 20,
        "latency_ms": {"p50": p99 / 2, "p99": p99, "n": 20.0},
        "metrics": {"nDCG@10": 0.5},
        "errors": {},
        "error_examples": {},
    }
    return GrowRungRecord(**{**defaults, **fields})


def write_grow_run(folder: Path, run: int, target: str, ladder: list[int], rungs: list[GrowRungRecord]) -> Path:
    """A complete grow run of `target` over `ladder` (docs) in `folder`/results.jsonl: the header (created at hour
    `run`, the SLO GROW_SLO), `rungs`, their answer and the end; its path."""
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(
        RunHeader(
            command="grow",
            created=f"2026-03-01T0{run}:00:00+00:00",
            ragbench_version="test",
            dataset={"name": "toy", "fingerprint": "f1"},
            measures=["ndcg_cut_10"],
            measure_labels={"ndcg_cut_10": "nDCG@10"},
            depth=100,
            targets=[target],
            grow={"rungs": ladder, "unit": "docs", "distractors": "synthetic:0", "slo": GROW_SLO},
        ),
        *rungs,
        summarise(target, rungs, parse_slo(GROW_SLO, None, 0.0), "docs"),
        EndRecord(status="complete", finished=f"2026-03-01T0{run}:30:00+00:00"),
    )
    writer.close()
    return folder / "results.jsonl"
