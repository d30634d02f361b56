"""The report's frontier (first measure against each cost, Pareto marks) and reranker-gain table."""

import numpy as np
import pytest

from bench.quality.scoring import comparisons, metric_records
from bench.report.quality_frontier import frontier_rows, rerank_gain_rows, rerank_pairs
from bench.report.quality_markdown import render_markdown
from bench.results.schema import EndRecord, RunHeader, TargetRecord
from bench.results.store import ResultsWriter, read_results
from bench.targets.registry import parse_spec

QIDS = [f"q{i}" for i in range(60)]


def target(text, p99=None, search_s=1.2, status="ok"):
    spec = parse_spec(text)
    return TargetRecord(
        name=spec.name,
        spec=spec.public_text,
        status=status,
        config={},
        index_seconds=1.0,
        search_seconds=search_s,
        queries=len(QIDS),
        errors=0,
        empty=0,
        latency_ms={} if p99 is None else {"p50": p99 / 2, "p99": p99},
        cost={},
        warnings={},
        scores_replaced=False,
        run_file="runs/x.trec",
    )


def results_file(tmp_path, targets, means):
    """A results file written by the real writer, with per-query values around each target's mean and the
    comparisons computed by the real significance code."""
    rng = np.random.default_rng(0)
    metrics = []
    for t in targets:
        values = np.clip(means[t.name] + rng.normal(0, 0.05, len(QIDS)), 0, 1)
        per_query = {"ndcg_cut_10": dict(zip(QIDS, values.tolist()))}
        metrics += metric_records(t.name, per_query, {"ndcg_cut_10": "nDCG@10"}, {}, 0)
    writer = ResultsWriter(tmp_path / "results.jsonl")
    header = RunHeader(
        command="quality",
        created="2026-01-01T00:00:00+00:00",
        ragbench_version="test",
        dataset={"name": "synthetic", "fingerprint": "f", "documents": 10, "queries": len(QIDS), "format": "beir"},
        measures=["ndcg_cut_10"],
        measure_labels={"ndcg_cut_10": "nDCG@10"},
        depth=100,
        seed=0,
        targets=[t.name for t in targets],
    )
    writer.write(header, *targets, *metrics, *comparisons(metrics, ["ndcg_cut_10"], 0))
    writer.write(EndRecord(status="complete", finished="2026-01-01T00:00:01+00:00"))
    writer.close()
    return read_results(tmp_path / "results.jsonl")


def column(header, rows, name):
    return {row[0]: row[header.index(name)] for row in rows}


def test_pareto_marks_follow_the_definition_and_targets_without_a_cost_take_no_part(tmp_path):
    targets = [
        target("fast=openwebui:vector@http://h", p99=10.0, search_s=0.6),
        target("good=openwebui:hybrid@http://h", p99=20.0, search_s=3.0),
        target("slow=openwebui:rerank@http://h", p99=30.0, search_s=1.8),  # worse and slower than `good`
        target("bm25", p99=None, search_s=1.2),  # ranked in a batch: no latency of its own; 20 ms per query
    ]
    results = results_file(tmp_path, targets, {"fast": 0.4, "good": 0.7, "slow": 0.6, "bm25": 0.65})
    header, rows = frontier_rows(results)
    marks = column(header, rows, "Pareto-optimal against")
    assert marks["fast"] == "p50 ms, p99 ms, search ms/query"
    assert marks["good"] == "p50 ms, p99 ms, search ms/query"
    assert marks["slow"] == "–"  # dominated by `good` on latency; by `bm25` (better, cheaper) on search time
    assert marks["bm25"] == "search ms/query"
    assert column(header, rows, "p99 ms")["bm25"] == "–"
    assert column(header, rows, "nDCG@10")["good"] == f"{results.metric('good', 'ndcg_cut_10').mean:.4f}"


def test_a_failed_target_is_not_on_any_frontier(tmp_path):
    targets = [target("a=bm25", search_s=0.1, status="failed"), target("b=bm25?k1=1.2", search_s=5.0)]
    header, rows = frontier_rows(results_file(tmp_path, targets, {"a": 0.9, "b": 0.5}))
    assert column(header, rows, "nDCG@10")["a"] == "failed"
    assert column(header, rows, "Pareto-optimal against") == {"a": "–", "b": "search ms/query"}


def test_an_ingest_block_adds_its_texts_per_second(tmp_path, monkeypatch):
    # Targets that embed through an endpoint record an `ingest` cost block (issue 16 §2).
    targets = [target("a=bm25"), target("b=bm25?k1=1.2")]
    results = results_file(tmp_path, targets, {"a": 0.6, "b": 0.5})
    for t, rate in zip(results.targets, (100.0, 250.0)):
        monkeypatch.setattr(t, "cost_blocks", {"ingest": {"texts_per_s": rate}}, raising=False)
    header, rows = frontier_rows(results)
    assert column(header, rows, "ingest texts/s") == {"a": "100.0", "b": "250.0"}
    assert "ingest texts/s" in column(header, rows, "Pareto-optimal against")["b"]


def test_each_reranked_target_is_paired_with_its_own_first_stage(tmp_path):
    targets = [
        target("bm25+rerank"),  # listed before its first stage: the comparison's a is the reranked one
        target("bm25"),
        target("dense?model=/m"),
        target("dense?model=/other"),
        target("dense+rerank?model=/m"),
        target("served=hybrid+rerank?reranker=rr"),  # the rerank stage's own option does not part it from `hybrid`
        target("hybrid"),
        target("lonely=hybrid:weighted+rerank"),  # its first stage did not run
    ]
    means = {t.name: 0.5 for t in targets} | {"bm25+rerank": 0.65, "dense?model=/m+rerank": 0.45}
    results = results_file(tmp_path, targets, means)
    assert [(a.name, b.name) for a, b in rerank_pairs(results)] == [
        ("bm25", "bm25+rerank"),
        ("dense?model=/m", "dense?model=/m+rerank"),
        ("hybrid", "served"),
    ]
    header, rows = rerank_gain_rows(results)
    by_reranked = {row[0]: row for row in rows}
    for first, reranked in [("bm25", "bm25+rerank"), ("dense?model=/m", "dense?model=/m+rerank")]:
        c = next(c for c in results.comparisons if {c.a, c.b} == {first, reranked})
        gain = np.mean(
            [
                results.metric(reranked, "ndcg_cut_10").per_query[q] - results.metric(first, "ndcg_cut_10").per_query[q]
                for q in QIDS
            ]
        )
        row = by_reranked[reranked]
        assert row[header.index("gain [95% CI]")].startswith(f"{gain:+.4f} [")
        assert float(row[header.index("Holm p (rand.)")]) == pytest.approx(c.p_randomization_holm, rel=1e-3)
        assert row[header.index("nDCG@10 reranked")] == f"{results.metric(reranked, 'ndcg_cut_10').mean:.4f}"
    low, high = (float(x) for x in by_reranked["bm25+rerank"][4].split("[")[1].rstrip("]").split(","))
    assert 0 < low < high
    assert by_reranked["bm25+rerank"][-1] == "reranking helps"
    assert by_reranked["dense?model=/m+rerank"][-1] == "reranking hurts"


def test_the_markdown_report_has_both_sections(tmp_path):
    results = results_file(tmp_path, [target("bm25"), target("bm25+rerank")], {"bm25": 0.5, "bm25+rerank": 0.6})
    text = render_markdown(results, [], tmp_path)
    assert "## What each quality point costs" in text and "## Reranker gain" in text
    plain = results_file(tmp_path / "plain", [target("bm25")], {"bm25": 0.5})
    assert "## Reranker gain" not in render_markdown(plain, [], tmp_path)
