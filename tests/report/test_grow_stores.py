"""The grow report of a ladder across vector stores (issue 47) puts the stores side by side: a table row per mode
and size with each store's figures in adjacent columns, and one figure of latency, memory and disk on log axes. A
ladder on one store gets neither."""

from __future__ import annotations

from pathlib import Path

from bench.report.grow import render
from bench.report.grow_stores import lines, side_by_side_table, stores_plot
from bench.results.schema import GrowRungRecord, RunHeader
from bench.results.store import Results
from tests.harness.records import grow_rung

PG = "pgvector-halfvec-hnsw"


def _rung(target: str, size: int, p99: float, rss_mib: int, store: str | None = None) -> GrowRungRecord:
    return grow_rung(
        target,
        1 if size < 200 else 2,
        size,
        p99,
        store=store,
        docs_per_s=4.0,
        queries=5,
        latency_ms={"p50": p99 / 2, "p99": p99},
        metrics={},
        app_rss_bytes=rss_mib * 2**20,
        store_bytes=100 * 2**20,
    )


def _results(rungs: list[GrowRungRecord]) -> Results:
    results = Results(Path("results.jsonl"), RunHeader(command="grow", created="t", ragbench_version="test"))
    for r in rungs:
        results.add(r)
    return results


# Named targets (`MODE-STORE`, store on the record) and spec-named ones (`store=` in the name) alike.
TWO_STORES = [
    _rung("hybrid-chroma", 100, 2500.0, 1200, "chroma"),
    _rung("hybrid-chroma", 300, 6500.0, 3300, "chroma"),
    _rung(f"hybrid-{PG}", 100, 1050.0, 810, PG),
    _rung(f"hybrid-{PG}", 300, 1100.0, 811, PG),
    _rung("openwebui:vector?store=chroma", 100, 50.0, 1200),
    _rung(f"openwebui:vector?store={PG}", 100, 44.0, 810),
]


def test_two_stores_side_by_side_per_mode_and_size(tmp_path):
    results = _results(TWO_STORES)
    assert {(line.store, line.mode) for line in lines(results)} == {
        ("chroma", "hybrid"), (PG, "hybrid"), ("chroma", "openwebui:vector"), (PG, "openwebui:vector"),
    }  # fmt: skip
    header, rows = side_by_side_table(results)
    assert header[2:4] == ["chroma p50 ms", "chroma p99 ms"] and header[7:9] == [f"{PG} p50 ms", f"{PG} p99 ms"]
    hybrid_300 = next(row for row in rows if row[:2] == ["hybrid", "300"])
    assert (hybrid_300[3], hybrid_300[5], hybrid_300[8], hybrid_300[10]) == ("6,500.0", "3,300", "1,100.0", "811")
    plot = stores_plot(results, tmp_path / "stores.png")
    assert plot is not None and plot.stat().st_size > 0
    md, html = render(results, tmp_path)
    assert "## Stores side by side" in md and "grow_stores.png" in md and "Stores side by side" in html


def test_one_store_gets_no_side_by_side(tmp_path):
    results = _results([r for r in TWO_STORES if "chroma" in r.target])
    assert lines(results) == [] and side_by_side_table(results)[1] == []
    assert stores_plot(results, tmp_path / "stores.png") is None
    assert "Stores side by side" not in render(results, tmp_path)[0]
