"""trec_eval's own regression files, reproduced to 4 decimals by `ragbench evaluate`.

The command runs in-process (tests/harness/cli.py: the same main() and output as `python -m bench`, without a
process each); tests/quality/test_metrics.py runs it as a subprocess."""

import pytest

from tests.harness.cli import run_cli
from tests.paths import golden

MEASURES = [
    "ndcg_cut.10",
    "ndcg",
    "recall.100",
    "map",
    "map_cut.100",
    "recip_rank",
    "P.10",
    "bpref",
    "Rprec",
    "success.10",
]
NAMES = {
    "ndcg_cut_10",
    "ndcg",
    "recall_100",
    "map",
    "map_cut_100",
    "recip_rank",
    "P_10",
    "bpref",
    "Rprec",
    "success_10",
}


def golden_values(name: str) -> dict[tuple[str, str], float]:
    values = {}
    for line in (golden() / name).read_text().splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        if measure in NAMES:
            values[(measure, qid)] = float(value)
    return values


@pytest.fixture
def evaluate(monkeypatch, capsys):
    """`ragbench evaluate qrels.test RESULTS ARGS...` -> its stdout; exit 0 asserted."""

    def run(results: str, *args: str) -> str:
        code, out, err = run_cli(
            ["evaluate", str(golden() / "qrels.test"), str(golden() / results), *args], monkeypatch, capsys
        )
        assert code == 0, err
        return out

    return run


def ragbench_evaluate(evaluate, results: str, *flags: str) -> dict[tuple[str, str], float]:
    out = evaluate(results, *flags, *(arg for m in MEASURES for arg in ("-m", m)))
    values = {}
    for line in out.splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        values[(measure, qid)] = float(value)
    return values


# out.test.aqc was made from results.trunc, where query 302 has no results: -c must count it as zero.
@pytest.mark.parametrize(
    "results, flags, golden_file",
    [
        ("results.test", (), "out.test.a"),
        ("results.test", ("-q",), "out.test.aq"),
        ("results.trunc", ("-q", "-c"), "out.test.aqc"),
    ],
)
def test_reproduces_trec_eval_golden_output(evaluate, results, flags, golden_file):
    expected = golden_values(golden_file)
    got = ragbench_evaluate(evaluate, results, *flags)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=5e-5), key


def test_output_has_trec_eval_columns(evaluate):
    assert evaluate("results.test", "-m", "map") == "map                   \tall\t0.1785\n"


def test_without_c_a_query_missing_from_the_run_is_not_averaged(evaluate):
    got = ragbench_evaluate(evaluate, "results.trunc")
    with_c = golden_values("out.test.aqc")
    # trec_eval without -c averages over the two queries that have results; with -c over all three.
    assert got[("map", "all")] == pytest.approx(with_c[("map", "all")] * 3 / 2, abs=1e-4)
