"""`compare`'s cost checks of quality targets: ingest texts/s and per-query p99, gated like a load point."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.gate.helpers import noisy_scores, write_results

GATE = ["--min-ingest-ratio", "0.9", "--max-query-p99-increase", "20%"]
SCORES = noisy_scores(40, seed=1)


def _fields(texts_per_s: float | None = 500.0, p99: float | None = 40.0, from_cache: int = 0) -> dict:
    blocks = {"ingest": {"texts": 1000, "from_cache": from_cache, "wall_s": 2.0, "texts_per_s": texts_per_s}}
    return {"latency_ms": {"p50": 10.0, "p99": p99} if p99 is not None else {}, "cost_blocks": blocks}


def _runs(tmp_path, base: dict, cur: dict):
    """Two runs of `served` (with the fields given) and `bm25` (no cost figures), same scores."""
    scores = {"served": {"ndcg_cut_10": SCORES}, "bm25": {"ndcg_cut_10": SCORES}}
    return (
        write_results(tmp_path / "base", scores, target_fields={"served": base}),
        write_results(tmp_path / "cur", scores, target_fields={"served": cur}),
    )


def _cost(out: str, target: str) -> dict:
    checks = json.loads(out)["checks"]
    return next(c for c in checks if c["kind"] == "cost" and c["figures"]["target"] == target)


@pytest.mark.parametrize(
    "texts_per_s, p99, failing",
    [(500.0, 40.0, False), (460.0, 47.0, False), (440.0, 40.0, True), (500.0, 49.0, True)],
)
def test_a_slower_ingest_or_a_later_query_p99_fails(tmp_path, compare, texts_per_s, p99, failing):
    base, cur = _runs(tmp_path, _fields(), _fields(texts_per_s, p99))
    code, out, _ = compare(base, cur, *GATE, "--format", "json")
    check = _cost(out, "served")
    assert (code, check["status"]) == ((1, "fail") if failing else (0, "pass")), out
    assert check["figures"]["ingest_ratio"] == pytest.approx(texts_per_s / 500.0)
    assert check["figures"]["query_p99_change"] == pytest.approx(p99 / 40.0 - 1)


def test_a_target_without_cost_figures_is_said_not_gated_in_every_output(tmp_path, compare):
    base, cur = _runs(tmp_path, _fields(), _fields(texts_per_s=100.0))
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    code, out, _ = compare(base, cur, *GATE, "--junit", junit, "--summary", summary)
    assert code == 1, out  # the served target's ingest fell to a fifth
    assert "FAIL  cost: served cost: ingest texts/s 500.0 → 100.0 (×0.200)" in out
    assert "info  cost: bm25 cost:" in out
    assert (
        "ingest texts/s not gated: no ingest cost block in the baseline run; no ingest cost block in the current" in out
    )
    md = summary.read_text()
    assert "### cost" in md and "| ❌ **FAIL** | served cost | 500.0 → 100.0 | 0.200 |" in md
    assert "- ℹ️ cost: bm25 cost — ingest texts/s not gated: no ingest cost block" in md
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["served cost"].find("failure") is not None
    assert "query p99 not gated: no per-query latency" in cases["bm25 cost"].find("skipped").get("message")


def test_an_ingest_served_from_the_cache_is_not_gated_and_says_so(tmp_path, compare):
    base, cur = _runs(tmp_path, _fields(), _fields(texts_per_s=None, from_cache=1000))
    code, out, _ = compare(base, cur, *GATE, "--format", "json")
    check = _cost(out, "served")
    assert code == 0 and check["status"] == "pass", out  # its p99 is still gated, and passed
    assert check["figures"]["not_gated"] == [
        "ingest texts/s not gated: every text came from the cache in the current run"
    ]


def test_without_cost_flags_cost_is_reported_not_gated(tmp_path, compare):
    base, cur = _runs(tmp_path, _fields(), _fields(texts_per_s=100.0, p99=400.0))
    code, out, _ = compare(base, cur, "--format", "json")
    check = _cost(out, "served")
    assert code == 0 and check["status"] == "info", out
    assert "no --min-ingest-ratio" in check["not_gated"] and "no --max-query-p99-increase" in check["not_gated"]
    assert not any(c["kind"] == "cost" and c["figures"]["target"] == "bm25" for c in json.loads(out)["checks"])


def test_benchmark_json_has_the_ingest_throughput(tmp_path, compare):
    base, cur = _runs(tmp_path, _fields(), _fields(from_cache=200))
    bench = tmp_path / "bench.json"
    code, out, _ = compare(base, cur, *GATE, "--benchmark-json", bench)
    assert code == 0, out
    entry = next(e for e in json.loads(bench.read_text())["benchmarks"] if e["name"] == "served ingest throughput")
    assert entry["stats"]["iterations"] == 800  # texts sent, those from the cache left out
    assert entry["stats"]["ops"] == pytest.approx(800 / 2.0)


@pytest.mark.parametrize("flag", ["--min-ingest-ratio", "--max-query-p99-increase"])
def test_a_bad_cost_flag_is_a_user_error(tmp_path, compare, flag):
    base, cur = _runs(tmp_path, _fields(), _fields())
    code, _, err = compare(base, cur, flag, "fast")
    assert code == 2 and err.strip().startswith(f"ragbench: error: {flag} 'fast'"), err
