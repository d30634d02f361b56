"""Metric semantics: trec_eval ties, -c, truncated MRR, measure names; ranx as an independent oracle."""

import json
import math
import subprocess
import sys

import pytest

from bench.core.errors import UserError
from bench.quality.evaluation import read_qrels
from bench.quality.metrics import Measure, evaluate, parse_measure
from bench.quality.runs import read_run, run_from_results, trec_order, write_run
from bench.targets.base import Hit, QueryResult
from tests.harness.cli import run_cli
from tests.paths import golden


def test_ties_follow_trec_eval_not_insertion_order():
    # "c" is the only relevant doc; all scores tie, so trec_eval orders c, b, a (docno descending).
    qrels = {"q": {"c": 1}}
    assert (
        evaluate(qrels, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, [parse_measure("recip_rank")]).means["recip_rank"] == 1.0
    )
    assert evaluate({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, [parse_measure("recip_rank")]).means[
        "recip_rank"
    ] == pytest.approx(1 / 3)


def test_complete_counts_missing_and_empty_queries_as_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    run = {"q1": {"a": 1.0}, "q2": {}}
    m = [parse_measure("ndcg_cut.10")]
    assert evaluate(qrels, run, m).means["ndcg_cut_10"] == 1.0
    assert evaluate(qrels, run, m, complete=True).means["ndcg_cut_10"] == pytest.approx(1 / 3)


def test_ndcg_gain_is_the_raw_grade():
    # Järvelin–Kekäläinen: gain = grade. Ideal = [2, 1]; run = [1, 2].
    qrels = {"q": {"a": 2, "b": 1}}
    got = evaluate(qrels, {"q": {"b": 2.0, "a": 1.0}}, [parse_measure("ndcg")]).means["ndcg"]
    expected = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert got == pytest.approx(expected)


def test_mrr_at_10_truncates_in_trec_order():
    qrels = {"q": {"relevant": 1}}
    docs = {f"d{i:02d}": float(100 - i) for i in range(10)} | {"relevant": 1.0}
    m = parse_measure("MRR@10")
    assert m == Measure("recip_rank", truncate=10) and m.label == "MRR@10"
    assert evaluate(qrels, {"q": docs}, [m]).means[m.trec_name] == 0.0
    assert evaluate(qrels, {"q": docs}, [parse_measure("recip_rank")]).means["recip_rank"] == pytest.approx(1 / 11)


@pytest.mark.parametrize(
    "text, trec_name",
    [
        ("ndcg_cut.10", "ndcg_cut_10"),
        ("ndcg_cut_10", "ndcg_cut_10"),
        ("nDCG@10", "ndcg_cut_10"),
        ("recall.100", "recall_100"),
        ("R@100", "recall_100"),
        ("map", "map"),
        ("MAP@100", "map_cut_100"),
        ("P.10", "P_10"),
        ("P@5", "P_5"),
        ("success.10", "success_10"),
        ("bpref", "bpref"),
        ("Rprec", "Rprec"),
        ("recip_rank", "recip_rank"),
    ],
)
def test_measure_names(text, trec_name):
    assert parse_measure(text).trec_name == trec_name


@pytest.mark.parametrize("text", ["ndgc", "map.x", "bpref.10", "foo@10", "nDCG@0"])
def test_unknown_measures_are_user_errors(text):
    with pytest.raises(UserError):
        parse_measure(text)


def test_run_file_round_trip_keeps_scores_exactly(tmp_path):
    run = read_run(golden() / "results.test")
    write_run(tmp_path / "r.trec", run, "tag with spaces")
    again = read_run(tmp_path / "r.trec")
    assert again == run
    first = (tmp_path / "r.trec").read_text().splitlines()[0].split()
    assert first[3] == "1" and first[5] == "tag_with_spaces"


def test_rank_order_is_kept_when_scores_are_missing_or_out_of_order():
    results = [QueryResult("q", [Hit("x", None), Hit("y", 0.9), Hit("z", 0.1)], 0.0)]
    run, replaced = run_from_results(results)
    assert replaced and [d for d, _ in trec_order(run["q"])] == ["x", "y", "z"]
    run, replaced = run_from_results([QueryResult("q", [Hit("x", 3.0), Hit("y", 2.0)], 0.0)])
    assert not replaced and run == {"q": {"x": 3.0, "y": 2.0}}


@pytest.mark.slow  # ranx compiles its metrics with numba on first use
def test_agrees_with_ranx_on_trec_eval_golden_files():
    """An independent implementation (ranx) gives the same means on data without ties."""
    import ranx  # a test dependency (pip install -e '.[test]')

    qrels, run = read_qrels(golden() / "qrels.test"), read_run(golden() / "results.test")
    ours = evaluate(qrels, run, [parse_measure(m) for m in ("ndcg_cut.10", "map", "recall.100", "P.10")])
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["ndcg@10", "map", "recall@100", "precision@10"])
    assert ours.means["ndcg_cut_10"] == pytest.approx(theirs["ndcg@10"], abs=1e-4)
    assert ours.means["map"] == pytest.approx(theirs["map"], abs=1e-4)
    assert ours.means["recall_100"] == pytest.approx(theirs["recall@100"], abs=1e-4)
    assert ours.means["P_10"] == pytest.approx(theirs["precision@10"], abs=1e-4)


def test_tied_scores_are_scored_in_the_order_the_target_returned(shared_dir):
    """Open WebUI 0.12 returns tied scores ([0.667, 0.0, 0.0], recorded): trec_eval would put the tie's
    docnos in descending order; ragbench must score the order the target returned (the one a user sees)."""
    body = json.loads((shared_dir / "recordings" / "openwebui-0.12.4" / "hyb_query_doc.json").read_text())["body"]
    names = [m["name"].removesuffix(".txt") for m in body["metadatas"][0]]
    scores = body["distances"][0]
    assert scores[1] == scores[2] and names[1] < names[2]  # the recorded tie, docnos ascending
    hits = [Hit(name, score) for name, score in zip(names, scores)]
    run, replaced = run_from_results([QueryResult("q", hits, 0.1)])
    assert replaced
    assert [doc for doc, _ in trec_order(run["q"])] == names
    qrels = {"q": {names[1]: 1}}  # the second document returned is the relevant one
    assert evaluate(qrels, run, [parse_measure("recip_rank")]).means["recip_rank"] == 0.5


def test_strictly_decreasing_scores_are_kept():
    run, replaced = run_from_results([QueryResult("q", [Hit("a", 0.9), Hit("b", 0.5), Hit("c", -1.0)], 0.1)])
    assert not replaced and run == {"q": {"a": 0.9, "b": 0.5, "c": -1.0}}


@pytest.mark.parametrize(
    "text",
    [
        "ndcg_cut.0",
        "P.0",
        "recall.0",
        "success.0",
        "map_cut.0",
        "nDCG@0",
        "MRR@0",
        "recip_rank_cut.0",
        "P.99999999999999999999",
        "ndcg_cut.1000001",
    ],
)
def test_cutoffs_outside_1_to_a_million_are_user_errors(text):
    with pytest.raises(UserError, match="cut-off must be from 1 to 1,000,000"):
        parse_measure(text)


def _trec_files(tmp_path, bom: bool):
    mark = "\ufeff" if bom else ""
    qrels, run = tmp_path / f"qrels{bom}", tmp_path / f"run{bom}"
    qrels.write_text(mark + "1 0 a 1\n1 0 b 1\n2 0 c 1\n", encoding="utf-8")
    run.write_text(mark + "1 Q0 a 1 3.0 t\n1 Q0 x 2 2.0 t\n2 Q0 y 1 2.0 t\n2 Q0 c 2 1.0 t\n", encoding="utf-8")
    return qrels, run


@pytest.mark.parametrize("flags", [[], ["-c"], ["-q"]])
def test_a_byte_order_mark_changes_nothing(tmp_path, monkeypatch, capsys, flags):
    outputs = []
    for bom in (False, True):
        qrels, run = _trec_files(tmp_path, bom)
        code, out, err = run_cli(["evaluate", str(qrels), str(run), "-m", "recip_rank", *flags], monkeypatch, capsys)
        assert code == 0, err
        outputs.append(out)
    assert outputs[0] == outputs[1]
    assert "recip_rank            \tall\t0.7500" in outputs[1]


# `ragbench evaluate` for each measure in turn, in one child process: [measure, exit code, stderr], a line each.
EVALUATE_EACH = """
import contextlib, io, json, sys
from bench.cli import main
qrels, run, *measures = sys.argv[1:]
for measure in measures:
    sys.argv, out, err = ["ragbench", "evaluate", qrels, run, "-m", measure], io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as exc:
            code = exc.code
    print(json.dumps([measure, code, err.getvalue()]), flush=True)
"""


def test_zero_cutoff_is_one_line_and_exit_2_not_an_abort(tmp_path):
    """On main this aborted inside trec_eval's C code (exit 134); run in a subprocess so an abort cannot kill pytest
    (one for all the measures: an abort ends it before its line, and its exit code says so)."""
    qrels, run = _trec_files(tmp_path, False)
    measures = ["ndcg_cut.0", "P.0", "recall.0", "success.0", "map_cut.0"]
    result = subprocess.run(
        [sys.executable, "-c", EVALUATE_EACH, str(qrels), str(run), *measures],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-300:])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [measure for measure, _, _ in lines] == measures
    for measure, code, stderr in lines:
        assert code == 2, (measure, code, stderr[-300:])
        assert stderr == f"ragbench: error: measure {measure!r}: the cut-off must be from 1 to 1,000,000\n"


def test_run_file_reader_names_a_folder_and_an_unreadable_file(tmp_path):
    with pytest.raises(UserError, match="is a folder, expected a run file"):
        read_run(tmp_path)
    with pytest.raises(UserError, match=r"/proc/self/mem: cannot read: Input/output error"):
        read_run("/proc/self/mem")  # a real file that refuses to be read
