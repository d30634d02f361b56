"""`ragbench evaluate DATASET RUN -m Answer@k`: answer measures from a run file reproduce `quality`'s figures."""

import json

import pytest

from bench.commands.quality import QualityRequest, quality_command
from bench.results.store import read_results
from tests.datasets.test_datasets import CORPUS, write_lines
from tests.harness.cli import run_cli


@pytest.fixture
def answered_set(tmp_path):
    root = tmp_path / "set"
    write_lines(root / "corpus.jsonl", CORPUS)
    write_lines(
        root / "qa.jsonl",
        [
            {"id": "q1", "query": "Who won Super Bowl 50?", "answers": ["Denver Broncos"], "relevant": ["d1"]},
            {"id": "q2", "query": "Where is Levi's Stadium?", "answers": ["Santa Clara"], "relevant": ["d3"]},
            {"id": "q3", "query": "Who lost Super Bowl 50?", "answers": ["Carolina Panthers"]},
            {"id": "q4", "query": "Which team is from Colorado?", "answers": ["Colorado Rapids"]},
        ],
    )
    return root


def test_evaluate_reproduces_quality(answered_set, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    measures = ["nDCG@10", "Answer@1", "Answer@5", "AnswerMRR@10"]
    quality_command(QualityRequest(dataset=answered_set, targets=["bm25"], out=out, measures=measures))
    results = read_results(out / "results.jsonl")
    args = ["evaluate", str(answered_set), str(out / "runs" / "bm25.trec"), "-c", "--format", "json"]
    for m in measures:
        args += ["-m", m]
    code, stdout, stderr = run_cli(args, monkeypatch, capsys)
    assert code == 0, stderr
    printed = json.loads(stdout)["measures"]
    for name in ("ndcg_cut_10", "has_answer_1", "has_answer_5", "answer_recip_rank_10"):
        assert printed[name]["all"] == results.metric("bm25", name).mean
    assert results.metric("bm25", "ndcg_cut_10").relevance == "qrels"  # q1, q2 judged
    assert set(results.metric("bm25", "has_answer_5").per_query) == {"q1", "q2", "q3", "q4"}


def test_without_c_only_queries_in_the_run_count(answered_set, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d2 1 2.0 t\nq1 Q0 d1 2 1.0 t\nq3 Q0 d3 1 1.0 t\n")
    code, stdout, _ = run_cli(
        ["evaluate", str(answered_set), str(run), "-m", "Answer@1", "-m", "AnswerMRR@10", "-q"], monkeypatch, capsys
    )
    assert code == 0
    lines = [line.split("\t") for line in stdout.splitlines()]
    values = {(name.strip(), qid): float(v) for name, qid, v in lines}
    # q1: d2 (Panthers, no "Denver Broncos") then d1 -> first answer at rank 2; q3: d3 holds no answer.
    assert values[("has_answer_1", "q1")] == 0.0 and values[("answer_recip_rank_10", "q1")] == 0.5
    assert values[("has_answer_1", "q3")] == 0.0
    assert values[("answer_recip_rank_10", "all")] == 0.25  # averaged over q1 and q3 only
    code, stdout, _ = run_cli(
        ["evaluate", str(answered_set), str(run), "-m", "AnswerMRR@10", "-c"], monkeypatch, capsys
    )
    assert stdout.split("\t")[-1].strip() == "0.1250"  # -c: all four answered queries


@pytest.mark.parametrize(
    "run_text, measure, message",
    [
        ("q1 Q0 nowhere 1 1.0 t\n", "Answer@5", "run.trec: document 'nowhere' (query 'q1') is not in the corpus"),
        ("q1 Q0 d1 1 1.0 t\n", "EM", "run.trec: EM scores generated answers, which a run file does not hold"),
    ],
)
def test_evaluate_errors(answered_set, tmp_path, monkeypatch, capsys, run_text, measure, message):
    run = tmp_path / "run.trec"
    run.write_text(run_text)
    code, _, stderr = run_cli(["evaluate", str(answered_set), str(run), "-m", measure], monkeypatch, capsys)
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1


def test_answer_measure_on_a_qrels_file_says_what_to_give(tmp_path, monkeypatch, capsys):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 1.0 t\n")
    code, _, stderr = run_cli(
        ["evaluate", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "Answer@5"], monkeypatch, capsys
    )
    assert code == 2 and "Answer@5 needs reference answers: give a dataset with answers" in stderr
