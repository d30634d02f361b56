"""A history of small results files written by the project's own writer and records: load sweeps and quality runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.results.schema import EndRecord, MetricRecord, RunHeader, TargetRecord
from bench.results.writer import ResultsWriter
from tests.gate.helpers import load_point


def created(run: int) -> str:
    return f"2026-03-{1 + run // 24:02d}T{run % 24:02d}:00:00+00:00"


def write_load_run(folder: Path, run: int, texts_per_s: dict[int, float], p99_ms: float = 20.0) -> Path:
    """One load run of points batch -> texts/s, its header stamped by its run number."""
    points = [load_point(batch=batch, texts_per_s=value, p99_ms=p99_ms) for batch, value in texts_per_s.items()]
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(
        RunHeader(command="load", created=created(run), ragbench_version="test", dataset={"name": "load workload"}),
        *points,
        EndRecord(status="complete", finished=created(run)),
    )
    writer.close()
    return folder / "results.jsonl"


def write_quality_run(
    folder: Path, run: int, scores: dict[str, float], fingerprint: str = "f1", status: str = "complete"
) -> Path:
    """One quality run of target `bm25`: nDCG@10 per query, served ingest texts/s and a per-query p99."""
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(
        RunHeader(
            command="quality",
            created=created(run),
            ragbench_version="test",
            dataset={"name": "synthetic", "fingerprint": fingerprint},
            measures=["ndcg_cut_10"],
            measure_labels={"ndcg_cut_10": "nDCG@10"},
            depth=10,
            targets=["bm25"],
        ),
        TargetRecord(
            name="bm25",
            spec="bm25",
            status="ok",
            config={},
            index_seconds=1.0,
            search_seconds=1.0,
            queries=len(scores),
            errors=0,
            empty=0,
            latency_ms={"p50": 5.0, "p99": 9.0},
            cost={},
            warnings={},
            scores_replaced=False,
            run_file="runs/bm25.trec",
            cost_blocks={"ingest": {"texts": 100, "texts_per_s": 500.0}},
        ),
        MetricRecord(
            target="bm25",
            measure="ndcg_cut_10",
            label="nDCG@10",
            mean=float(np.mean(list(scores.values()))),
            ci_low=0.0,
            ci_high=1.0,
            queries=len(scores),
            per_query=scores,
        ),
    )
    if status:
        writer.write(EndRecord(status=status, finished=created(run)))
    writer.close()
    return folder / "results.jsonl"


def base_scores(queries: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).beta(2, 2, size=queries)


def as_scores(values: np.ndarray) -> dict[str, float]:
    return {f"q{i:03d}": float(v) for i, v in enumerate(values)}
