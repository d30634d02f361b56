"""Grow ladders of one named target on two vector stores (issue 47): a named target's rung records carry only its
name, so the store stated on its spec (`store=`) is the record's own field, and `compare` and `history` read it:
never paired, said."""

from __future__ import annotations

from pathlib import Path

from bench.gate.checks import CheckKind, Status
from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig
from bench.grow.answer import summarise
from bench.history.series import read_history
from bench.results.schema import EndRecord, GrowRungRecord, RungStatus, RunHeader
from bench.results.schema.run import record_store
from bench.results.store import read_results
from bench.results.writer import ResultsWriter
from bench.sizing.slo import parse_slo

RUNGS = [100, 200]
SLO = parse_slo("p99=50ms", None, 0.0)
PG = "pgvector-halfvec-hnsw"


def _rung(i: int, p99: float, store: str | None) -> GrowRungRecord:
    return GrowRungRecord(
        target="vector",  # NAME=SPEC: the spec's `store=` is not in the name
        kind="openwebui",
        store=store,
        rung=i,
        size=RUNGS[i - 1],
        unit="docs",
        added=100,
        ingest_mode="incremental",
        status=RungStatus.OK,
        ingest_seconds=10.0,
        docs_per_s=10.0,
        queries=20,
        latency_ms={"p50": p99 / 2, "p99": p99, "n": 20.0},
        metrics={"nDCG@10": 0.5},
        errors={},
        error_examples={},
    )


def _ladder(folder: Path, run: int, store: str | None, p99: float) -> Path:
    rungs = [_rung(i, p99 * i, store) for i in (1, 2)]
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
            targets=["vector"],
            grow={"rungs": RUNGS, "unit": "docs", "distractors": "synthetic:0", "slo": "p99=50ms"},
        ),
        *rungs,
        summarise("vector", rungs, SLO, "docs"),
        EndRecord(status="complete", finished=f"2026-03-01T0{run}:30:00+00:00"),
    )
    writer.close()
    return folder / "results.jsonl"


def test_a_grow_rung_keeps_its_store_through_the_file(tmp_path):
    (rung, _) = read_results(_ladder(tmp_path, 1, PG, 10.0)).grow_rungs
    assert (rung.store, record_store(rung)) == (PG, PG)


def test_compare_does_not_pair_two_stores_of_one_named_grow_target(tmp_path):
    # pgvector's rungs 10x slower: paired, the p99 ratio would fail the gate.
    base, cur = _ladder(tmp_path / "a", 1, "chroma", 10.0), _ladder(tmp_path / "b", 2, PG, 100.0)
    comparison = compare_paths(base, cur, GateConfig())
    assert comparison.passed
    (said,) = [c for c in comparison.checks if c.kind == CheckKind.GROW]  # one info check, no rung paired
    assert said.status == Status.INFO and said.not_gated == f"different stores: chroma vs {PG}, not paired"


def test_history_keeps_one_grow_series_per_store_and_says_so(tmp_path):
    files = [_ladder(tmp_path / "a", 1, "chroma", 10.0), _ladder(tmp_path / "b", 2, PG, 100.0)]
    history = read_history([str(f) for f in files])
    p99 = [s for s in history.series if s.job == "grow" and s.figure == "p99 ms"]
    assert len(p99) == 4 and all(len(s.observations) == 1 for s in p99)  # 2 rungs x 2 stores, never one series
    assert any(f"different stores: chroma vs {PG}" in n for n in history.notes)
