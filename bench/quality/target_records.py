"""A finished quality target's records: the target record (latency percentiles, costs, warnings) and its queries."""

from __future__ import annotations

import numpy as np

from bench.core.percentiles import percentiles
from bench.quality.generation import Generated
from bench.quality.rerank_pairs import spec_record
from bench.results.outdir import run_file
from bench.results.schema import (
    QueryRecord,
    TargetRecord,
    TargetStatus,
)
from bench.results.schema.cost import CostBlock
from bench.targets.base import QueryResult, TargetSpec


def _latency_ms(values_ms: list[float]) -> dict[str, float]:
    """The p50, p90 and p99 of the query latencies, their mean and their maximum."""
    if not values_ms:
        return {}
    spread = {"mean": float(np.mean(values_ms)), "max": float(max(values_ms))}
    return {**percentiles(values_ms, ("p50", "p90", "p99")), **spread}


def target_record(
    spec: TargetSpec,
    config: dict[str, object],
    results: list[QueryResult],
    index_s: float,
    search_s: float,
    replaced: bool,
    generated: dict[str, Generated],
    cost_blocks: dict[str, CostBlock],
) -> TargetRecord:
    cost_keys = sorted({k for r in results for k in r.cost})
    warnings: dict[str, int] = {}
    for r in results:
        for w in set(r.warnings):
            warnings[w] = warnings.get(w, 0) + 1
    name = spec.name
    return TargetRecord(
        name=name,
        spec=spec.public_text,
        status=TargetStatus.OK,
        config=config,
        index_seconds=index_s,
        search_seconds=search_s,
        queries=len(results),
        errors=sum(1 for r in results if r.error),
        empty=sum(1 for r in results if not r.hits and not r.error),
        latency_ms=_latency_ms([r.latency_s * 1000 for r in results if not r.error and r.latency_s is not None]),
        cost={k: float(np.mean([r.cost.get(k, 0.0) for r in results])) for k in cost_keys},
        warnings=warnings,
        scores_replaced=replaced,
        run_file=run_file(name),
        answer_errors=sum(1 for g in generated.values() if g.error is not None),
        latency_parts_ms=_parts(results),
        cost_blocks=cost_blocks,
        parsed=spec_record(spec),
    )


def _parts(results: list[QueryResult]) -> dict[str, dict[str, float]]:
    """p50 and p99 of each measured part of the queries' latency (failed queries left out, as for latency_ms)."""
    names = sorted({k for r in results for k in r.parts_ms})
    kept = [r for r in results if not r.error]
    return {n: percentiles([r.parts_ms[n] for r in kept if n in r.parts_ms]) for n in names}


def query_records(name: str, results: list[QueryResult], generated: dict[str, Generated]) -> list[QueryRecord]:
    return [
        QueryRecord(
            target=name,
            qid=r.qid,
            latency_ms=None if r.latency_s is None else r.latency_s * 1000,
            hits=len(r.hits),
            error=r.error,
            cost=r.cost,
            warnings=r.warnings,
            answer=generated[r.qid].text if r.qid in generated else None,
            answer_error=generated[r.qid].error if r.qid in generated else None,
            parts_ms=r.parts_ms,
        )
        for r in results
    ]
