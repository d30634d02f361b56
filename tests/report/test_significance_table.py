"""The report's paired-significance table: its intervals are each pair's own (unadjusted), labelled so, and a
verdict never seems to contradict the interval beside it (issue 24)."""

from types import SimpleNamespace

from bench.report.quality_tables import CI_COLUMN, comparison_rows
from bench.results.schema import ComparisonRecord


def _pair(b: str, low: float, high: float, p: float, p_holm: float) -> ComparisonRecord:
    return ComparisonRecord(
        measure="ndcg_cut_10",
        a="a",
        b=b,
        n=60,
        mean_a=0.5,
        mean_b=0.5 + (low + high) / 2,
        mean_diff=(low + high) / 2,
        ci_low=low,
        ci_high=high,
        p_randomization=p,
        p_ttest=p,
        p_randomization_holm=p_holm,
        p_ttest_holm=p_holm,
        permutations=10_000,
    )


def test_an_interval_that_excludes_zero_beside_a_holm_verdict_of_no_difference_says_so():
    results = SimpleNamespace(
        header=SimpleNamespace(measure_labels={"ndcg_cut_10": "nDCG@10"}),
        metric=lambda target, measure: None,  # no metric records: no ranking shorter than a cut-off
        comparisons=[
            _pair("worse", -0.05, -0.01, 0.01, 0.03),  # significant after Holm
            _pair("hidden", +0.002, +0.042, 0.03, 0.09),  # the row: excludes 0, Holm not significant
            _pair("same", -0.02, +0.02, 0.6, 1.0),
        ],
    )
    header, rows = comparison_rows(results)
    assert CI_COLUMN == "mean b − a [95% CI, unadjusted]" and CI_COLUMN in header
    verdicts = {row[2]: row[header.index("verdict")] for row in rows}
    assert verdicts == {
        "worse": "a better",
        "hidden": "no significant difference after Holm (the unadjusted interval excludes 0)",
        "same": "no significant difference",
    }
