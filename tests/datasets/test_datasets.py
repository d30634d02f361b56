"""Q&A sets with answers: loading (JSONL and BEIR, with or without qrels), bad input, `datasets check`,
and `quality` on a set that has only answers (default measures, answer-derived judgments)."""

import json
import re

import pytest

from bench.commands.quality import QualityRequest, quality_command
from bench.core.errors import InputError, UserError
from bench.datasets import check_dataset, load_dataset
from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

CORPUS = [
    {"_id": "d1", "title": "Broncos", "text": "The Denver Broncos won Super Bowl 50 in 2016."},
    {"_id": "d2", "title": "Panthers", "text": "The Carolina Panthers lost Super Bowl 50."},
    {"_id": "d3", "title": "Levi's Stadium", "text": "Levi's Stadium is in Santa Clara, California."},
    {"_id": "d4", "title": "Denver Broncos", "text": "A team from Colorado."},  # the answer only in the title
]


def write_lines(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def qa_only(tmp_path):
    root = tmp_path / "qa"
    write_lines(root / "corpus.jsonl", CORPUS)
    write_lines(
        root / "qa.jsonl",
        [
            {"id": "q1", "query": "Who won Super Bowl 50?", "answers": ["Denver Broncos", "Broncos"]},
            {"id": "q2", "query": "Where is Levi's Stadium?", "answers": ["Santa Clara"]},
            {"id": "q3", "query": "When was Super Bowl 50?", "answers": ["/20[0-9]{2}/"]},
            {"id": "q4", "query": "Which team is from Colorado?", "answers": ["Colorado Rapids"]},
        ],
    )
    return root


def test_jsonl_answers_without_relevant(qa_only):
    ds = load_dataset(qa_only)
    assert ds.format == "jsonl" and ds.qrels == {}
    assert ds.answers["q1"] == ["Denver Broncos", "Broncos"]
    assert ds.evaluated_queries() == ["q1", "q2", "q3", "q4"]
    # Derived judgments: the text holds the answer (titles excluded, as DPR): d4's title does not count.
    assert ds.answer_qrels() == {"q1": {"d1": 1}, "q2": {"d3": 1}, "q3": {"d1": 1}}


def test_jsonl_mixed_relevant_and_answers(tmp_path):
    root = tmp_path / "mixed"
    write_lines(root / "corpus.jsonl", CORPUS)
    write_lines(
        root / "qa.jsonl",
        [
            {"id": "q1", "query": "a", "relevant": ["d1"], "answers": ["Broncos"]},
            {"id": "q2", "query": "b", "relevant": {"d3": 2}},
            {"id": "q3", "query": "c", "answers": ["Panthers"]},
        ],
    )
    ds = load_dataset(root)
    assert ds.qrels == {"q1": {"d1": 1}, "q2": {"d3": 2}}
    assert ds.answers == {"q1": ["Broncos"], "q3": ["Panthers"]}
    report = check_dataset(ds)
    assert report.problems["queries without judgments (scored by answer measures only)"] == 1
    assert report.problems["queries without answers (scored by qrels measures only)"] == 1


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": "q1", "query": "a"}, r"qa.jsonl:2: missing field 'relevant' or 'answers'"),
        ({"id": "q1", "query": "a", "answers": "Broncos"}, r"qa.jsonl:2: field 'answers' must be a list of strings"),
        ({"id": "q1", "query": "a", "answers": [""]}, r"qa.jsonl:2: empty answer"),
        (
            {"id": "q1", "query": "a", "answers": ["\u200b"]},
            r"qa.jsonl:2: answer '\\u200b' has no letters, digits or symbols",
        ),
        ({"id": "q1", "query": "a", "answers": [["x"]]}, r"qa.jsonl:2: answer \['x'\] must be a string"),
        (
            {"id": "q1", "query": "a", "answers": ["/[unclosed/"]},
            r"qa.jsonl:2: answer '/\[unclosed/': invalid regular expression",
        ),
    ],
)
def test_bad_answers_name_file_and_line(tmp_path, record, message):
    root = tmp_path / "bad"
    write_lines(root / "corpus.jsonl", CORPUS)
    write_lines(root / "qa.jsonl", [{"id": "q0", "query": "fine", "answers": ["x"]}, record])
    with pytest.raises(InputError, match=message):
        load_dataset(root)


def test_beir_answers_without_qrels(tmp_path):
    root = write_beir(
        tmp_path / "beir",
        CORPUS,
        [
            {"_id": "q1", "text": "Who won?", "answers": ["Broncos"]},
            {"_id": "q2", "text": "Who lost?", "answers": ["Panthers"]},
        ],
        None,
    )
    ds = load_dataset(root)
    assert (ds.format, ds.split, ds.qrels) == ("beir", None, {})
    assert ds.answers == {"q1": ["Broncos"], "q2": ["Panthers"]}
    with pytest.raises(InputError, match=r"qrels: no qrels/<split>.tsv file"):
        load_dataset(root, split="test")


def test_beir_with_neither_qrels_nor_answers_is_refused(tmp_path):
    root = write_beir(tmp_path / "beir", CORPUS, [{"_id": "q1", "text": "Who won?"}], None)
    with pytest.raises(InputError, match=re.escape("qrels: no qrels/<split>.tsv file")):
        load_dataset(root, format="beir")


def test_beir_answers_with_qrels_keep_both(tmp_path):
    root = write_beir(
        tmp_path / "beir", CORPUS, [{"_id": "q1", "text": "Who won?", "answers": ["Broncos"]}], [("q1", "d1", 1)]
    )
    ds = load_dataset(root)
    assert ds.qrels == {"q1": {"d1": 1}} and ds.answers == {"q1": ["Broncos"]}
    assert set(check_dataset(ds).measures) == {"qrels", "answers"}


def test_check_on_xquad(shared_dir, monkeypatch, capsys):
    code, out, err = run_cli(["datasets", "check", str(shared_dir / "datasets" / "xquad-en")], monkeypatch, capsys)
    assert code == 0, err
    assert "answers           1190 for 1190 queries (1.00 per answered query)" in out
    assert "answers measures  Answer@k, AnswerMRR@k; EM, F1, Contains with --generate" in out
    # xquad-en's answer "7,000,000 square kilometres (2,70" was cut mid-number: no paragraph holds it.
    assert (
        "warning: 1 queries whose answers occur in no document (DPR has_answer, titles excluded) "
        "(e.g. 5729e2316aef0514001550c5)"
    ) in out


def test_check_counts_answers_in_no_document(qa_only):
    report = check_dataset(load_dataset(qa_only))
    assert (report.answered_queries, report.answers) == (4, 5)
    assert report.problems["queries whose answers occur in no document (DPR has_answer, titles excluded)"] == 1
    assert report.examples["queries whose answers occur in no document (DPR has_answer, titles excluded)"] == ["q4"]
    assert "nDCG@k" in report.measures["answers"]  # no qrels: ranking measures on answer-derived judgments


def test_quality_on_answers_only_set(qa_only, tmp_path):
    out = tmp_path / "out"
    quality_command(QualityRequest(dataset=qa_only, targets=["bm25"], out=out))
    results = read_results(out / "results.jsonl")
    assert results.header.measures == ["has_answer_1", "has_answer_5", "has_answer_20", "answer_recip_rank_10"]
    assert set(results.header.measure_relevance.values()) == {"answers"}
    # q4's answer is nowhere: it scores zero and still counts.
    assert results.metric("bm25", "has_answer_20").per_query["q4"] == 0.0
    assert results.metric("bm25", "has_answer_20").queries == 4

    out2 = tmp_path / "out2"
    quality_command(QualityRequest(dataset=qa_only, targets=["bm25"], out=out2, measures=["nDCG@10", "Answer@5"]))
    results = read_results(out2 / "results.jsonl")
    ndcg = results.metric("bm25", "ndcg_cut_10")
    assert (ndcg.relevance, ndcg.label) == ("answers", "nDCG@10 (answers)")
    assert set(ndcg.per_query) == {"q1", "q2", "q3"}  # q4 has no answer-bearing document to rank
    assert "nDCG@10 (answers)" in (out2 / "report.md").read_text()


def test_answer_measures_need_answers(tmp_path):
    root = write_beir(tmp_path / "beir", CORPUS, [{"_id": "q1", "text": "Who won?"}], [("q1", "d1", 1)])
    with pytest.raises(UserError, match="Answer@5 needs reference answers"):
        quality_command(QualityRequest(dataset=root, targets=["bm25"], out=tmp_path / "o", measures=["Answer@5"]))
    with pytest.raises(UserError, match="--generate needs reference answers"):
        quality_command(
            QualityRequest(
                dataset=root, targets=["bm25"], out=tmp_path / "o", generate="chat@http://127.0.0.1:9/v1?model=m"
            )
        )
