"""trec_eval's own regression files, reproduced to 4 decimals by `ragbench evaluate`."""

import subprocess
import sys

import pytest

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


def ragbench_evaluate(results: str, *flags: str) -> dict[tuple[str, str], float]:
    args = [sys.executable, "-m", "bench", "evaluate", str(golden() / "qrels.test"), str(golden() / results), *flags]
    for m in MEASURES:
        args += ["-m", m]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
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
def test_reproduces_trec_eval_golden_output(results, flags, golden_file):
    expected = golden_values(golden_file)
    got = ragbench_evaluate(results, *flags)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=5e-5), key


def test_output_has_trec_eval_columns():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "evaluate",
            str(golden() / "qrels.test"),
            str(golden() / "results.test"),
            "-m",
            "map",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "map                   \tall\t0.1785\n"


def test_without_c_a_query_missing_from_the_run_is_not_averaged():
    got = ragbench_evaluate("results.trunc")
    with_c = golden_values("out.test.aqc")
    # trec_eval without -c averages over the two queries that have results; with -c over all three.
    assert got[("map", "all")] == pytest.approx(with_c[("map", "all")] * 3 / 2, abs=1e-4)
