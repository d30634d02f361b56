"""Results records a test builds by hand: a run's header, a target's record and the end, with the fields a
test does not care about set to plain defaults."""

from __future__ import annotations

from typing import Any

from bench.results.schema import EndRecord, RunHeader, TargetRecord

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
