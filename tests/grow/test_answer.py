"""The answer from rung records: first break (failed ingest, failed queries, the SLO), the law, quality per decade."""

from __future__ import annotations

import pytest

from bench.grow.answer import summarise
from bench.results.schema import GrowRungRecord, RungStatus
from bench.sizing.slo import parse_slo


def _rung(i: int, size: int, p99: float, ndcg: float, **extra) -> GrowRungRecord:
    return GrowRungRecord(
        target="t",
        kind="openwebui",
        rung=i,
        size=size,
        unit="docs",
        added=size,
        ingest_mode="incremental",
        status=extra.pop("status", RungStatus.OK),
        ingest_seconds=1.0,
        docs_per_s=float(size),
        queries=10,
        latency_ms={"p50": p99 / 2, "p99": p99},
        metrics={"nDCG@10": ndcg},
        errors=extra.pop("errors", {}),
        error_examples=extra.pop("error_examples", {}),
        **extra,
    )


SIZES = [1000, 2000, 4000, 8000]


def test_the_first_rung_over_the_slo_breaks_and_the_law_says_where_the_slo_is_reached():
    rungs = [_rung(i, n, 0.25 * n, 0.6 - 0.1 * i) for i, n in enumerate(SIZES, 1)]  # p99 linear: 250 ms per 1k
    summary = summarise("t", rungs, parse_slo("p99=1.5s", None, 0.0), "docs")
    assert summary.first_break == 8000 and summary.largest_ok == 4000
    assert summary.first_break_reason == "p99 2,000 ms > SLO 1,500 ms"
    p99 = next(law for law in summary.laws if law.quantity == "p99")
    assert p99.law == "linear" and p99.slo_size == pytest.approx(6000, rel=1e-6)
    assert summary.quality_per_decade["nDCG@10"] < 0  # falls as distractors grow
    assert "breaks at 8,000 docs" in summary.answer and "reaches the SLO at ~6,000 docs" in summary.answer


def test_failed_queries_break_a_rung_with_the_servers_message():
    message = "HTTP 400 from POST /api/v1/retrieval/query/doc: too many SQL variables"
    rungs = [
        _rung(1, 1000, 10, 0.5),
        _rung(
            2, 2000, 11, 0.5, status=RungStatus.ERRORS, errors={"http-400": 10}, error_examples={"http-400": message}
        ),
    ]
    summary = summarise("t", rungs, None, "docs")
    assert summary.first_break == 2000 and summary.largest_ok == 1000
    assert summary.first_break_reason == f"10 of 10 queries failed (http-400 ×10: {message})"
    assert summary.laws == []  # two rungs: too few for a law


def test_a_failed_ingest_breaks_and_its_rung_is_left_out_of_the_laws():
    rungs = [_rung(i, n, 5.0, 0.5) for i, n in enumerate(SIZES[:3], 1)]
    failed = _rung(4, 8000, 0.0, 0.0, status=RungStatus.FAILED, error="HTTP 500: out of memory")
    failed.latency_ms, failed.metrics = {}, {}
    summary = summarise("t", [*rungs, failed], None, "docs")
    assert summary.first_break_reason == "ingest failed: HTTP 500: out of memory"
    assert {law.rungs for law in summary.laws} == {3}


def test_a_ladder_within_the_slo_holds_to_its_largest_rung():
    rungs = [_rung(i, n, 5.0, 0.5) for i, n in enumerate(SIZES, 1)]
    summary = summarise("t", rungs, parse_slo("p99=2s", None, 0.0), "docs")
    assert summary.first_break is None and summary.largest_ok == 8000
    assert summary.answer.startswith("t: holds within p99 ≤ 2,000 ms to 8,000 docs")
    assert summary.quality_per_decade["nDCG@10"] == pytest.approx(0.0, abs=1e-9)


def test_a_first_rung_already_over_the_slo_extrapolates_no_slo_size_below_the_ladder():
    # the Open WebUI hybrid ladder's shape: over the SLO from the first rung, latency linear in the size
    rungs = [_rung(i, n, 2000 + 0.5 * n, 0.5) for i, n in enumerate([1000, 2000, 3000, 4000], 1)]
    summary = summarise("t", rungs, parse_slo("p99=2s", None, 0.0), "docs")
    assert summary.first_break == 1000 and summary.largest_ok is None
    p99 = next(law for law in summary.laws if law.quantity == "p99")
    assert p99.law == "linear"
    assert (p99.slo_size, p99.slo_size_low, p99.slo_size_high) == (None, None, None)  # no size below the first rung
    assert summary.answer.startswith("t: breaks at 1,000 docs, the first rung: p99 2,500 ms > SLO 2,000 ms;")
    assert "reaches the SLO" not in summary.answer and "over the SLO from the first rung" in summary.answer


def test_a_rung_the_machine_stalled_neither_breaks_nor_holds_and_leaves_the_laws():
    """Issue 45: hybrid p50 12.3 s at 2k chunks while the machine was at load 10+, 2.6 s at 10k once it calmed; the
    laws were fitted across both. A rung whose own timer lagged past a tenth of its p50 is the machine's: it is
    named, neither the first break nor the largest held, and its latencies are not fitted."""
    from bench.core.machine import MachineView

    stalled = MachineView(cores=2, load_start=10.4, load_end=12.1, busy_percent=100.0, steal_percent=0.0)
    rungs = [_rung(i, n, 0.25 * n, 0.5) for i, n in enumerate(SIZES, 1)]  # linear, within a 2.5 s SLO to 8000
    rungs[1].latency_ms = {"p50": 12_300.0, "p99": 14_000.0}  # the stall, over the SLO
    rungs[1].machine, rungs[1].lag_p99_ms = stalled, 2_400.0
    rungs[3].lag_p99_ms = 3.0  # a calm rung's own timer: carried
    summary = summarise("t", rungs, parse_slo("p99=2.5s", None, 0.0), "docs")
    assert summary.busy_rungs == [2]
    assert summary.first_break is None and summary.largest_ok == 8000
    p99 = next(law for law in summary.laws if law.quantity == "p99")
    assert p99.law == "linear" and p99.rungs == 3
    assert "rungs 2: this machine was too busy" in summary.answer


def test_failed_queries_on_a_stalled_rung_still_break_it():
    rungs = [_rung(1, 1000, 10, 0.5), _rung(2, 2000, 11, 0.5, errors={"timeout": 10}, error_examples={})]
    rungs[1].lag_p99_ms = 500.0
    summary = summarise("t", rungs, None, "docs")
    assert summary.first_break == 2000  # an error is the app's answer, whatever the machine did
