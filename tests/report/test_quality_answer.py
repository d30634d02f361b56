"""The quality report and the console open with the answer (issue 46): on the first measure, the best target and its
gain over each other one with its interval and its verdict after Holm, the others in order, and each reranked target
against its own first stage."""

from __future__ import annotations

from types import SimpleNamespace

from bench.report.quality_answer import answer_lines
from bench.results.schema import ComparisonRecord, MetricRecord
from bench.results.store import read_results
from tests.harness.cli import run_cli

NDCG = "ndcg_cut_10"


def _metric(target: str, mean: float) -> MetricRecord:
    return MetricRecord(target, NDCG, "nDCG@10", mean, mean - 0.03, mean + 0.03, 688, {})


def _pair(a: str, b: str, diff: float, low: float, high: float, p_holm: float) -> ComparisonRecord:
    return ComparisonRecord(NDCG, a, b, 688, 0.5, 0.5 + diff, diff, low, high, p_holm, p_holm, p_holm, p_holm, 10_000)


def _results(targets: dict[str, tuple[str, float]], comparisons: list[ComparisonRecord]) -> SimpleNamespace:
    metrics = {name: _metric(name, mean) for name, (_, mean) in targets.items()}
    return SimpleNamespace(
        header=SimpleNamespace(measures=[NDCG], measure_labels={NDCG: "nDCG@10"}),
        targets=[SimpleNamespace(name=name, spec=spec, parsed=None) for name, (spec, _) in targets.items()],
        metric=lambda target, measure: metrics.get(target) if measure == NDCG else None,
        comparisons=comparisons,
    )


# The demo's own figures (ragbench demo, numpy 2.4.6, the data set freshly built; the pairs as `quality` writes
# them: b − a)
DEMO = _results(
    {"bm25": ("bm25", 0.6427), "dense": ("dense", 0.6129), "hybrid": ("hybrid", 0.6706)},
    [
        _pair("bm25", "dense", -0.0297, -0.0604, +0.0001, 0.0570),
        _pair("bm25", "hybrid", +0.0279, +0.0093, +0.0462, 0.0040),
        _pair("dense", "hybrid", +0.0577, +0.0365, +0.0787, 0.0003),
    ],
)


def test_the_demo_answers_in_one_line_which_target_is_best_and_what_it_beats():
    assert answer_lines(DEMO) == [
        "hybrid: nDCG@10 0.671, +0.028 over bm25 [+0.009, +0.046], significant after Holm; "
        "+0.058 over dense [+0.036, +0.079], significant after Holm; bm25 not different from dense"
    ]


def test_a_reranked_target_is_answered_against_its_own_first_stage():
    results = _results(
        {"bm25": ("bm25", 0.60), "dense": ("dense", 0.62), "dense+rerank": ("dense+rerank", 0.66)},
        [
            _pair("bm25", "dense", +0.02, -0.01, +0.05, 0.20),
            _pair("bm25", "dense+rerank", +0.06, +0.03, +0.09, 0.001),
            _pair("dense", "dense+rerank", +0.04, +0.02, +0.06, 0.002),
        ],
    )
    lines = answer_lines(results)
    # the best first stage: the reranked target is not a first stage, so it is not "the best" here
    assert lines[0] == (
        "dense: nDCG@10 0.620, +0.020 over bm25 [-0.010, +0.050], not significant after Holm"
        "; no significant winner on nDCG@10"
    )
    assert lines[1] == (
        "dense+rerank: nDCG@10 0.660, better than its first stage: +0.040 over dense [+0.020, +0.060],"
        " significant after Holm"
    )


def test_a_reranker_that_hurts_says_so():
    results = _results(
        {"bm25": ("bm25", 0.60), "bm25+rerank": ("bm25+rerank", 0.55)},
        [_pair("bm25", "bm25+rerank", -0.05, -0.08, -0.02, 0.001)],
    )
    assert answer_lines(results)[1] == (
        "bm25+rerank: nDCG@10 0.550, worse than its first stage: -0.050 against bm25 [-0.080, -0.020],"
        " significant after Holm"
    )


def test_one_target_has_nothing_to_compare():
    results = _results({"bm25": ("bm25", 0.6)}, [])
    assert answer_lines(results) == ["bm25: nDCG@10 0.600 [0.570, 0.630] (one target: nothing to compare)"]


def test_the_console_and_both_reports_open_with_the_answer(cache_dir, tmp_path, monkeypatch, capsys):
    # the demo's data set with two lexical engines: no model to load, so seconds, not minutes
    out_dir = tmp_path / "q"
    code, out, err = run_cli(
        [
            *("quality", "--dataset", "builtin:numpy-docs", "-t", "bm25", "-t", "plain=bm25?stemmer=none"),
            *("--max-queries", "200", "--out", str(out_dir)),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, err
    answer = answer_lines(read_results(out_dir / "results.jsonl"))
    assert len(answer) == 1 and " over " in answer[0]
    console = out.splitlines()
    assert console[0].startswith("Answer on nDCG@10") and console[1] == f"  {answer[0]}"
    markdown = (out_dir / "report.md").read_text().splitlines()
    assert markdown[0] == "# ragbench quality report" and f"- **{answer[0]}**" in markdown[:6]
    html = (out_dir / "report.html").read_text()
    assert html.index(answer[0]) < html.index("<h2>Results</h2>")


def test_two_targets_that_tie_are_said_to_tie_not_one_named_the_winner():
    # the colleague's run: 10 queries, both targets 0.943, the paired difference a float's noise under zero
    results = _results(
        {"bm25": ("bm25", 0.9430), "hybrid": ("hybrid", 0.9430)},
        [_pair("bm25", "hybrid", -1e-17, -0.02, +0.02, 1.0)],
    )
    assert answer_lines(results) == ["bm25 and hybrid tie on nDCG@10 (0.943); no target is significantly better"]


def test_a_tie_at_the_top_still_reports_the_gain_over_a_target_below():
    results = _results(
        {"bm25": ("bm25", 0.70), "hybrid": ("hybrid", 0.70), "dense": ("dense", 0.60)},
        [
            _pair("bm25", "hybrid", 0.0, -0.01, +0.01, 1.0),
            _pair("bm25", "dense", -0.10, -0.13, -0.07, 0.001),
            _pair("dense", "hybrid", +0.10, +0.07, +0.13, 0.001),
        ],
    )
    assert answer_lines(results) == [
        "bm25 and hybrid tie on nDCG@10 (0.700); bm25 +0.100 over dense [+0.070, +0.130], significant after Holm"
    ]


def test_a_significant_difference_under_the_lines_precision_is_said_beside_the_tie():
    # thousands of queries can make +0.0003 significant: the line says the tie it shows and the test's verdict
    results = _results(
        {"bm25": ("bm25", 0.8003), "hybrid": ("hybrid", 0.8000)},
        [_pair("hybrid", "bm25", +0.0003, +0.0001, +0.0005, 0.01)],
    )
    assert answer_lines(results) == [
        "bm25 and hybrid tie on nDCG@10 (0.800); bm25 +0.0003 over hybrid, significant after Holm"
    ]
