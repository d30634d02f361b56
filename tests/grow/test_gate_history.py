"""`compare` gates two grow ladders rung by rung (p50/p99 ratios, quality drops, the first breaking rung moved
earlier), and `history` reads grow runs as one series per target, planned rung and figure."""

from __future__ import annotations

from pathlib import Path

from bench.core.values import Allowance
from bench.gate.checks import CheckKind, Status
from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig
from bench.history.series import Gate, read_history
from bench.results.schema import GrowRungRecord, RungStatus
from tests.harness.records import grow_rung, write_grow_run

RUNGS = [100, 200, 400]


def _rung(i: int, p99: float, ndcg: float, failed: bool = False) -> GrowRungRecord:
    if not failed:
        return grow_rung("vec", i, RUNGS[i - 1], p99, metrics={"nDCG@10": ndcg})
    failure = {"status": RungStatus.FAILED, "queries": 0, "latency_ms": {}, "metrics": {}}
    return grow_rung("vec", i, RUNGS[i - 1], p99, **failure, error="HTTP 500: out of memory")


def _ladder(folder: Path, run: int, rungs: list[GrowRungRecord]) -> Path:
    return write_grow_run(folder, run, "vec", RUNGS, rungs)


def _compare(tmp_path: Path, base: list[GrowRungRecord], cur: list[GrowRungRecord], config: GateConfig):
    a, b = _ladder(tmp_path / "a", 1, base), _ladder(tmp_path / "b", 2, cur)
    return compare_paths(a, b, config)


BASE = [_rung(1, 10.0, 0.60), _rung(2, 20.0, 0.55), _rung(3, 60.0, 0.50)]  # over the SLO at rung 3


def test_the_same_ladder_passes_rung_by_rung_and_its_first_break_stays(tmp_path):
    comparison = _compare(tmp_path, BASE, BASE, GateConfig())
    grow = [c for c in comparison.checks if c.kind == CheckKind.GROW]
    assert comparison.passed and len(grow) == 4 and comparison.notes == []
    assert grow[0].figures["p50_ratio"] == 1.0 and "first break: rung 3 (400)" in grow[-1].summary


def test_a_slower_rung_past_the_p99_allowance_fails_and_the_ratios_are_said(tmp_path):
    cur = [_rung(1, 10.0, 0.60), _rung(2, 30.0, 0.55), _rung(3, 60.0, 0.50)]  # rung 2's p99 +50%
    comparison = _compare(tmp_path, BASE, cur, GateConfig(max_query_p99_increase=Allowance(0.2, relative=True)))
    grow = {c.name: c for c in comparison.checks if c.kind == CheckKind.GROW}
    assert grow["vec rung 2 (200 docs)"].status == Status.FAIL
    assert grow["vec rung 2 (200 docs)"].figures["p99_ratio"] == 1.5
    assert grow["vec rung 1 (100 docs)"].status == Status.PASS
    assert grow["vec first break"].status == Status.PASS  # rung 3 in both


def test_a_quality_drop_fails_by_default_and_passes_within_max_drop(tmp_path):
    cur = [_rung(1, 10.0, 0.60), _rung(2, 20.0, 0.53), _rung(3, 60.0, 0.50)]  # nDCG@10 -0.02 at rung 2
    strict = _compare(tmp_path, BASE, cur, GateConfig())
    assert [c.name for c in strict.regressions] == ["vec rung 2 (200 docs)"]
    assert "nDCG@10 0.550 → 0.530 (drop > 0.000)" in strict.regressions[0].summary
    lenient = _compare(tmp_path, BASE, cur, GateConfig(max_drop={"ndcg_cut_10": Allowance(0.05)}))
    assert lenient.passed


def test_a_first_break_moved_earlier_is_a_regression_and_a_failed_rung_is_not_gated_alone(tmp_path):
    cur = [_rung(1, 10.0, 0.60), _rung(2, 0.0, 0.0, failed=True)]  # ingest fails at rung 2 now
    comparison = _compare(tmp_path, BASE, cur, GateConfig())
    grow = {c.name: c for c in comparison.checks if c.kind == CheckKind.GROW}
    assert grow["vec first break"].status == Status.FAIL
    assert "rung 3 (400): p99 60 ms > SLO 50 ms → rung 2 (200): ingest failed" in grow["vec first break"].summary
    assert grow["vec rung 2 (200 docs)"].status == Status.INFO
    assert grow["vec rung 3 (400 docs)"].not_gated == "measured in the baseline ladder only"
    later = _compare(tmp_path, cur, BASE, GateConfig())  # the break moved later: no regression
    assert all(c.status != Status.FAIL for c in later.checks if c.name == "vec first break")


def test_history_reads_a_series_per_target_rung_and_figure(tmp_path):
    runs = [_ladder(tmp_path / f"r{i}", i, [_rung(1, 10.0 + i, 0.6), _rung(2, 20.0 * i, 0.5)]) for i in (1, 2, 3)]
    history = read_history([str(r) for r in runs])
    p99 = history.find("grow toy (f1) vec [openwebui] rung 200 docs", "p99 ms")
    assert p99 is not None and p99.gate == Gate.QUERY_P99 and p99.values == [20.0, 40.0, 60.0]
    ndcg = history.find("grow toy (f1) vec [openwebui] rung 100 docs", "nDCG@10")
    assert ndcg is not None and ndcg.gate == Gate.QUALITY and ndcg.measure == "ndcg_cut_10"
    assert history.jobs() == ["grow"]
