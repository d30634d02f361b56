"""The report's frontier (first measure against each cost, Pareto marks) and reranker-gain table."""

import numpy as np
import pytest

from bench.quality.rerank_pairs import rerank_pairs as rerank_pairs_by_name
from bench.quality.scoring import comparisons, metric_records
from bench.report.quality_frontier import (
    cost_block_rows,
    frontier_rows,
    latency_parts_rows,
    rerank_gain_rows,
    rerank_pairs,
)
from bench.report.quality_html import render_html
from bench.report.quality_markdown import render_markdown
from bench.results.store import read_results
from bench.results.writer import ResultsWriter
from bench.targets.registry import parse_target_spec
from tests.harness.records import end_record, run_header, target_record

QIDS = [f"q{i}" for i in range(60)]


def target(text, p99=None, search_s=1.2, status="ok", **fields):
    spec = parse_target_spec(text)
    return target_record(
        spec.name,
        spec=spec.public_text,
        status=status,
        index_seconds=1.0,
        search_seconds=search_s,
        queries=len(QIDS),
        latency_ms={} if p99 is None else {"p50": p99 / 2, "p99": p99},
        run_file="runs/x.trec",
        **fields,
    )


def results_file(tmp_path, targets, means, hourly_usd=None, ranked=None):
    """A results file written by the real writer, with per-query values around each target's mean and the
    comparisons computed by the real significance code."""
    rng = np.random.default_rng(0)
    metrics = []
    for t in targets:
        values = np.clip(means[t.name] + rng.normal(0, 0.05, len(QIDS)), 0, 1)
        per_query = {"ndcg_cut_10": dict(zip(QIDS, values.tolist()))}
        short = {"ndcg_cut_10": ranked[t.name]} if t.name in (ranked or {}) else {}  # documents it ranked, if fewer
        metrics += metric_records(t.name, per_query, {"ndcg_cut_10": "nDCG@10"}, {}, 0, short)
    writer = ResultsWriter(tmp_path / "results.jsonl")
    header = run_header(
        dataset={"name": "synthetic", "fingerprint": "f", "documents": 10, "queries": len(QIDS), "format": "beir"},
        measures=["ndcg_cut_10"],
        measure_labels={"ndcg_cut_10": "nDCG@10"},
        depth=100,
        seed=0,
        targets=[t.name for t in targets],
        hourly_usd=hourly_usd,
    )
    reranked = rerank_pairs_by_name({t.name: parse_target_spec(t.spec) for t in targets})  # as the pipeline pairs
    writer.write(header, *targets, *metrics, *comparisons(metrics, ["ndcg_cut_10"], 0, reranked))
    writer.write(end_record())
    writer.close()
    return read_results(tmp_path / "results.jsonl")


def column(header, rows, name):
    return {row[0]: row[header.index(name)] for row in rows}


def test_pareto_marks_follow_the_definition_and_targets_without_a_cost_take_no_part(tmp_path):
    targets = [
        target("fast=openwebui:vector@http://h", p99=10.0, search_s=0.6),
        target("good=openwebui:hybrid@http://h", p99=20.0, search_s=3.0),
        target(
            "slow=openwebui:rerank@http://h?reranker_url=http://r&reranker_model=m", p99=30.0, search_s=1.8
        ),  # worse and slower than `good`
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


def test_an_ingest_block_adds_its_texts_per_second(tmp_path):
    # Targets that embed through an endpoint record an `ingest` cost block (issue 16 §2), read back from the file.
    targets = [
        target("a=bm25", cost_blocks={"ingest": {"texts_per_s": 100.0}}),
        target("b=bm25?k1=1.2", cost_blocks={"ingest": {"texts_per_s": 250.0}}),
        target("c=bm25?k1=1.3", cost_blocks={"ingest": {"texts_per_s": None}}),  # every text from the cache
    ]
    results = results_file(tmp_path, targets, {"a": 0.6, "b": 0.5, "c": 0.7})
    header, rows = frontier_rows(results)
    assert column(header, rows, "ingest texts/s") == {"a": "100.0", "b": "250.0", "c": "–"}
    marks = column(header, rows, "Pareto-optimal against")
    assert "ingest texts/s" in marks["b"] and "ingest texts/s" in marks["a"] and "ingest texts/s" not in marks["c"]


SERVED_BLOCKS = {
    "ingest": {
        "texts": 1000,
        "from_cache": 200,
        "requests": 25,
        "tokens": 64000,
        "wall_s": 4.0,
        "texts_per_s": 200.0,
        "tokens_per_s": 16000.0,
        "request_ms": {"p50": 120.0, "p99": 480.5},
        "retries": {"429": 3},
        "splits": {"413": 1},
        "over_limit": 7,
        "over_limit_by": "TEI /tokenize vs /info max_input_length 512",
    },
    "query_embed": {"texts": 60, "from_cache": 60, "tokens": None, "wall_s": 0.01, "texts_per_s": None},
}
SERVED_PARTS = {
    "embed_ms": {"p50": 5.0, "p99": 9.5},
    "search_ms": {"p50": 1.0, "p99": 2.0},
    "rerank_ms": {"p50": 30.0, "p99": 80.25},
}


def test_the_report_renders_latency_parts_and_cost_blocks(tmp_path):
    served = target("served=dense?embedder=emb", p99=90.0, latency_parts_ms=SERVED_PARTS, cost_blocks=SERVED_BLOCKS)
    results = results_file(tmp_path, [served, target("bm25")], {"served": 0.6, "bm25": 0.5})
    header, rows = latency_parts_rows(results)
    assert header == ["target", "embed p50 ms", "embed p99 ms", "search p50 ms", "search p99 ms", "rerank p50 ms",
                      "rerank p99 ms"]  # fmt: skip
    assert rows == [["served", "5.0", "9.5", "1.0", "2.0", "30.0", "80.2"]]  # bm25 has no parts: no row
    header, rows = cost_block_rows(results)
    ingest, query = (dict(zip(header, row)) for row in rows)
    assert ingest == {
        "target": "served",
        "phase": "ingest",
        "texts": "1000",
        "from cache": "200",
        "tokens": "64000",
        "wall s": "4.00",
        "texts/s": "200.0",
        "tokens/s": "16000.0",
        "request p50/p99 ms": "120.0 / 480.5",
        "retries": "429: 3",
        "splits": "413: 1",
        "over input limit": "7 (TEI /tokenize vs /info max_input_length 512)",
    }
    assert (query["from cache"], query["texts/s"], query["tokens"], query["retries"]) == ("60", "–", "–", "none")
    assert query["over input limit"] == "–"  # written before the count existed
    text = render_markdown(results, [], tmp_path)
    assert "## Per-query latency parts" in text and "## Embedding cost" in text
    assert (
        "| served | ingest | 1000 | 200 | 64000 | 4.00 | 200.0 | 16000.0 | 120.0 / 480.5 | 429: 3 | 413: 1 | 7 (TEI"
        in text
    )
    page = render_html(results, [])
    assert "<h2>Per-query latency parts</h2>" in page and "<h2>Embedding cost</h2>" in page and "480.5" in page


def test_without_served_targets_the_report_has_no_served_cost_sections(tmp_path):
    text = render_markdown(results_file(tmp_path, [target("bm25")], {"bm25": 0.5}), [], tmp_path)
    assert "## Per-query latency parts" not in text and "## Embedding cost" not in text


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
    means = {t.name: 0.5 for t in targets} | {"bm25+rerank": 0.65, "dense+rerank?model=/m": 0.45}
    results = results_file(tmp_path, targets, means)
    assert [(a.name, b.name) for a, b in rerank_pairs(results)] == [
        ("bm25", "bm25+rerank"),
        ("dense?model=/m", "dense+rerank?model=/m"),
        ("hybrid", "served"),
    ]
    header, rows = rerank_gain_rows(results)
    by_reranked = {row[0]: row for row in rows}
    for first, reranked in [("bm25", "bm25+rerank"), ("dense?model=/m", "dense+rerank?model=/m")]:
        c = next(c for c in results.comparisons if {c.a, c.b} == {first, reranked})
        gain = np.mean(
            [
                results.metric(reranked, "ndcg_cut_10").per_query[q] - results.metric(first, "ndcg_cut_10").per_query[q]
                for q in QIDS
            ]
        )
        row = by_reranked[reranked]
        assert row[header.index("gain [95% CI, unadjusted]")].startswith(f"{gain:+.4f} [")
        assert float(row[header.index("Holm p (rand.)")]) == pytest.approx(c.p_randomization_holm, rel=1e-3)
        assert row[header.index("nDCG@10 reranked")] == f"{results.metric(reranked, 'ndcg_cut_10').mean:.4f}"
    low, high = (float(x) for x in by_reranked["bm25+rerank"][4].split("[")[1].rstrip("]").split(","))
    assert 0 < low < high
    assert by_reranked["bm25+rerank"][-1] == "reranking helps"
    assert by_reranked["dense+rerank?model=/m"][-1] == "reranking hurts"


def test_a_reranked_target_under_load_is_paired_with_its_first_stage_at_the_same_rate(tmp_path):
    """`quality --background`: hybrid_rr@bg5.238 against hybrid@bg5.238 (what reranking gains under that load),
    never against hybrid@bg0 (a pair nothing tested: "not compared")."""
    targets = [
        target_record(name, spec=spec, status="ok", queries=len(QIDS), run_file="runs/x.trec", search_seconds=1.0)
        for name, spec in [
            ("hybrid@bg0", "hybrid"),
            ("hybrid_rr@bg0", "hybrid_rr=hybrid+rerank?reranker=rr"),
            ("hybrid@bg5.238", "hybrid"),
            ("hybrid_rr@bg5.238", "hybrid_rr=hybrid+rerank?reranker=rr"),
        ]
    ]
    means = {"hybrid@bg0": 0.5, "hybrid_rr@bg0": 0.6, "hybrid@bg5.238": 0.5, "hybrid_rr@bg5.238": 0.3}
    results = results_file(tmp_path, targets, means)
    assert [(a.name, b.name) for a, b in rerank_pairs(results)] == [
        ("hybrid@bg0", "hybrid_rr@bg0"),
        ("hybrid@bg5.238", "hybrid_rr@bg5.238"),
    ]
    _, rows = rerank_gain_rows(results)
    verdicts = {row[0]: row[-1] for row in rows}
    assert verdicts == {"hybrid_rr@bg0": "reranking helps", "hybrid_rr@bg5.238": "reranking hurts"}


def test_a_reranked_target_shorter_than_the_cut_off_is_said_not_tested_against_its_first_stage(tmp_path):
    targets = [target("bm25"), target("bm25+rerank")]
    results = results_file(tmp_path, targets, {"bm25": 0.5, "bm25+rerank": 0.6}, ranked={"bm25+rerank": 7})
    assert results.comparisons == []
    _, rows = frontier_rows(results)
    assert [row[1] for row in rows] == [f"{results.metric('bm25', 'ndcg_cut_10').mean:.4f}", rows[1][1]]
    assert rows[1][1].endswith(" over 7 documents")
    _, rows = rerank_gain_rows(results)
    assert [row[-1] for row in rows] == [
        "not tested: nDCG@10 over 7 documents reranked, over its full ranking first stage (rankings of different "
        "lengths)"
    ]


def test_the_markdown_report_has_both_sections(tmp_path):
    results = results_file(tmp_path, [target("bm25"), target("bm25+rerank")], {"bm25": 0.5, "bm25+rerank": 0.6})
    text = render_markdown(results, [], tmp_path)
    assert "## What each quality point costs" in text and "## Reranker gain" in text
    plain = results_file(tmp_path / "plain", [target("bm25")], {"bm25": 0.5})
    assert "## Reranker gain" not in render_markdown(plain, [], tmp_path)


def _shared_run(tmp_path, hourly_usd=None):
    """`dense` embedded the corpus; `hybrid` read it from the cache in the same run (a shared embedder); `old`
    read it from an earlier run's cache."""
    own = {"texts": 100, "from_cache": 0, "from_earlier_run": 0, "shared": [], "texts_per_s": 200.0}
    shared = {"with": "dense", "phase": "ingest", "texts": 100, "texts_per_s": 200.0, "wall_s": 0.5, "requests": 4}
    targets = [
        target("dense=dense?embedder=emb", search_s=0.6, cost_blocks={"ingest": own}),
        target(
            "hybrid=hybrid?embedder=emb",
            search_s=1.2,
            cost_blocks={"ingest": {**own, "from_cache": 100, "texts_per_s": None, "shared": [shared]}},
        ),
        target(
            "old=dense?embedder=old",
            search_s=0.3,
            cost_blocks={"ingest": {**own, "from_cache": 100, "from_earlier_run": 100, "texts_per_s": None}},
        ),
    ]
    return results_file(tmp_path, targets, {"dense": 0.5, "hybrid": 0.6, "old": 0.4}, hourly_usd)


def test_a_shared_ingest_is_credited_and_priced_where_a_price_is_given(tmp_path):
    results = _shared_run(tmp_path, hourly_usd=3.6)
    header, rows = frontier_rows(results)
    ingest = column(header, rows, "ingest texts/s")
    assert ingest == {"dense": "200.0", "hybrid": "200.0 (shared with dense)", "old": "– (from an earlier run's cache)"}
    marks = column(header, rows, "Pareto-optimal against")
    assert "ingest texts/s" in marks["hybrid"] and "ingest texts/s" not in marks["dense"]  # same rate, better
    # $3.6/h = $0.001/s: 10 ms per query -> $0.01 per 1k queries; 200 texts/s -> $5 per 1M texts
    per_query = {k: float(v) for k, v in column(header, rows, "$ per 1k queries").items()}
    assert per_query == pytest.approx({"dense": 0.01, "hybrid": 0.02, "old": 0.005}, abs=1e-9)
    assert column(header, rows, "$ per 1M texts")["hybrid"] == "5.0000 (shared with dense)"
    assert "$3.6 per hour" in render_markdown(results, [], tmp_path)
    _, cells = cost_block_rows(results)
    assert [r[3] for r in cells] == ["0", "100 (100 shared with dense)", "100 (100 from an earlier run)"]


def test_without_a_price_the_frontier_has_no_dollar_columns(tmp_path):
    header, _ = frontier_rows(_shared_run(tmp_path))
    assert not any(h.startswith("$") for h in header)


def test_the_frontier_plot_fills_exactly_the_tables_pareto_points(tmp_path, monkeypatch):
    from bench.report import plots

    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or path)
    results = _shared_run(tmp_path)
    assert plots.frontier_plot(results, tmp_path / "frontier.png") == tmp_path / "frontier.png"
    header, rows = frontier_rows(results)
    marks = column(header, rows, "Pareto-optimal against")
    panels = [ax for ax in figures[0].axes if ax.collections]
    assert [ax.get_xlabel().split(" (")[0] for ax in panels] == ["search ms/query", "ingest texts/s"]
    for ax in panels:
        cost = ax.get_xlabel().split(" (")[0]
        names = [t.get_text() for t in ax.texts]
        filled = [bool(len(c.get_facecolors())) and c.get_facecolors()[0][3] > 0 for c in ax.collections]
        assert {n for n, f in zip(names, filled) if f} == {n for n in names if cost in marks[n]}, cost
    assert plots.frontier_plot(results_file(tmp_path, [target("a=bm25", search_s=0.0)], {"a": 0.5}), tmp_path / "x.png")


def test_the_frontier_plot_is_written_with_the_report(tmp_path):
    from bench.report import write_report

    _shared_run(tmp_path)
    write_report(tmp_path / "results.jsonl")
    assert (tmp_path / "plots" / "frontier.png").stat().st_size > 0
    assert "frontier.png" in (tmp_path / "report.md").read_text()


APP_PARTS = {
    "embedding_ms": {"p50": 33.0, "p99": 60.0},
    "rerank_ms": {"p50": 1789.0, "p99": 3600.0},
    "app_ms": {"p50": 111.0, "p99": 250.0},
}


def test_the_latency_parts_chart_stacks_exactly_the_tables_figures(tmp_path, monkeypatch):
    """An app's metered hops beside a served target's parts: the table reads served parts, hops, then the app's
    rest, and the chart stacks each target's bars with the table's p50 / p99 in that order."""
    from bench.report import plots

    figures = []
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or path)
    served = target("served=dense?embedder=emb", p99=90.0, latency_parts_ms=SERVED_PARTS)
    app = target(
        "owui=openwebui:rerank@http://h?reranker_url=http://r&reranker_model=m", p99=3900.0, latency_parts_ms=APP_PARTS
    )
    results = results_file(tmp_path, [served, app, target("bm25")], {"served": 0.6, "owui": 0.6, "bm25": 0.5})
    header, rows = latency_parts_rows(results)
    assert [h.removesuffix(" p50 ms") for h in header[1::2]] == ["embed", "search", "rerank", "embedding", "app"]
    assert plots.latency_parts_plot(results, tmp_path / "parts.png") == tmp_path / "parts.png"
    for ax, quantile in zip(figures[0].axes, ("p50", "p99")):
        bars = {}  # target row -> bar widths in the legend's order
        for container in ax.containers:
            for y, bar in enumerate(container):
                bars.setdefault(y, []).append(bar.get_width())
        by_target = {row[0]: row for row in rows}
        for y, t in enumerate(["served", "owui"]):
            cells = by_target[t][1 + (quantile == "p99") :: 2]
            assert [round(w, 1) for w in bars[y]] == [float(c) if c != "–" else 0.0 for c in cells], (t, quantile)
    legend = [text.get_text() for text in figures[0].axes[1].get_legend().get_texts()]
    assert legend == ["embed", "search", "rerank", "embedding", "app"]
    assert plots.latency_parts_plot(results_file(tmp_path, [target("bm25")], {"bm25": 0.5}), tmp_path / "y.png") is None


def test_the_loaded_vs_idle_table_says_a_measure_is_over_fewer_documents(tmp_path):
    from bench.report.quality_under_load import rate_rows

    targets = [target("bm25"), target("bm25")]
    targets[0].name, targets[1].name = "app@bg0", "app@bg5"
    results = results_file(tmp_path, targets, {"app@bg0": 0.5, "app@bg5": 0.5}, ranked={"app@bg0": 7, "app@bg5": 7})
    _, rows = rate_rows(results, "app", [(0.0, "app@bg0"), (5.0, "app@bg5")])
    assert all(row[1].endswith("] over 7 documents") for row in rows)
