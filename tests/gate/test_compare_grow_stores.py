"""Grow ladders of one named target on two vector stores (issue 47): a named target's rung records carry only its
name, so the store stated on its spec (`store=`) is the record's own field, and `compare` and `history` read it:
never paired, said."""

from __future__ import annotations

from pathlib import Path

from bench.gate.checks import CheckKind, Status
from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig
from bench.history.series import read_history
from bench.results.schema.run import record_store
from bench.results.store import read_results
from tests.harness.records import grow_rung, write_grow_run

RUNGS = [100, 200]
PG = "pgvector-halfvec-hnsw"


def _ladder(folder: Path, run: int, store: str | None, p99: float) -> Path:
    # NAME=SPEC: the spec's `store=` is not in the name "vector"
    rungs = [grow_rung("vector", i, RUNGS[i - 1], p99 * i, store=store) for i in (1, 2)]
    return write_grow_run(folder, run, "vector", RUNGS, rungs)


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
