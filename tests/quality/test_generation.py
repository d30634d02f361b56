"""Generated answers through an OpenAI-compatible chat endpoint (the deterministic LLM double, which
answers with OpenAI's wire shape and `usage`): prompt built from each target's top texts, SQuAD EM/F1
and Contains per question, latency and LLM tokens in the results and the report, failures kept apart."""

import csv
import json
import shutil

import pytest

from bench.commands.quality import QualityRequest, quality_command
from bench.core.errors import MeasurementFailed, ServerError, UserError
from bench.endpoints.meter import MAX_TOKENS_PER_CALL, Meter, checked_usage
from bench.endpoints.meter_calls import CallRecord
from bench.quality.generation import chat_prompt, parse_generate
from bench.results.store import read_results
from tests.harness.cli import run_cli
from tests.harness.llm_double import LLMDouble, count_tokens

# Scripted replies, by question; every other question gets "unknown".
REPLIES = {
    "How many points did the Panthers defense surrender?": "308.",  # reference 308: EM 1
    "How many career sacks did Jared Allen have?": "He had 136 career sacks",  # reference 136
    "Who registered the most sacks on the team this season?": "Kawann",  # reference Kawann Short
}
# (EM, F1, Contains), worked out by hand from SQuAD v1.1's and DPR's definitions.
EXPECTED = {
    "56beb4343aeaaa14008c925b": (1.0, 1.0, 1.0),
    "56beb4343aeaaa14008c925c": (0.0, 2 * (1 / 5) * 1 / (1 / 5 + 1), 1.0),  # 1 common token of 5 predicted
    "56beb4343aeaaa14008c925d": (0.0, 0.0, 0.0),
    "56beb4343aeaaa14008c925e": (0.0, 0.0, 0.0),
    "56beb4343aeaaa14008c925f": (0.0, 2 * 1 * (1 / 2) / (1 + 1 / 2), 0.0),  # precision 1, recall 1/2
    "56d6f3500d65d21400198290": (0.0, 0.0, 0.0),
}


@pytest.fixture(scope="module")
def six_questions(shared_dir, tmp_path_factory):
    """xquad-en's corpus and its first six questions, answers only (no qrels)."""
    root = tmp_path_factory.mktemp("xquad6")
    source = shared_dir / "datasets" / "xquad-en"
    shutil.copy(source / "corpus.jsonl", root / "corpus.jsonl")
    lines = (source / "queries.jsonl").read_text().splitlines()[:6]
    (root / "queries.jsonl").write_text("\n".join(lines) + "\n")
    return root


class Recorder:
    def __init__(self):
        self.messages = {}

    def __call__(self, messages):
        question = messages[-1]["content"].rsplit("Question: ", 1)[1].split("\nAnswer:")[0]
        self.messages[question] = messages
        return REPLIES.get(question, "unknown")


@pytest.fixture(scope="module")
def generated_run(six_questions, tmp_path_factory):
    recorder = Recorder()
    with LLMDouble(answer=recorder) as llm:
        out = tmp_path_factory.mktemp("gen")
        quality_command(
            QualityRequest(
                dataset=six_questions, targets=["bm25"], out=out, generate=f"chat@{llm.base_url}?model=reader&context=3"
            )
        )
        calls = list(llm.calls)
    return out, read_results(out / "results.jsonl"), recorder, calls


def test_scores_per_question(generated_run):
    _, results, _, _ = generated_run
    assert results.header.measures[-3:] == ["exact_match", "f1", "contains_answer"]
    for measure, position in (("exact_match", 0), ("f1", 1), ("contains_answer", 2)):
        record = results.metric("bm25", measure)
        assert record.relevance == "generated"
        assert record.per_query == pytest.approx({qid: v[position] for qid, v in EXPECTED.items()}, abs=1e-12)


def test_prompt_holds_the_top_texts(generated_run, six_questions):
    out, _results, recorder, _ = generated_run
    corpus = {d["_id"]: d for d in map(json.loads, (six_questions / "corpus.jsonl").read_text().splitlines())}
    run = {}
    for line in (out / "runs" / "bm25.trec").read_text().splitlines():
        qid, _, doc, rank, _, _ = line.split()
        run.setdefault(qid, []).append((int(rank), doc))
    queries = {q["_id"]: q["text"] for q in map(json.loads, (six_questions / "queries.jsonl").read_text().splitlines())}
    for qid, question in queries.items():
        top = [doc for _, doc in sorted(run[qid])[:3]]
        texts = [f"{corpus[d]['title']} {corpus[d]['text']}" for d in top]
        assert recorder.messages[question] == chat_prompt(question, texts)


def test_answer_text_latency_and_tokens_per_question(generated_run):
    _, results, _recorder, calls = generated_run
    by_qid = {q.qid: q for q in results.queries}
    assert by_qid["56beb4343aeaaa14008c925b"].answer == "308."
    assert by_qid["56beb4343aeaaa14008c925d"].answer == "unknown"
    # Tokens are the endpoint's own `usage`: the double counts words of every message and of the reply.
    assert sorted(q.cost["answer_llm_prompt_tokens"] for q in by_qid.values()) == sorted(c.prompt_tokens for c in calls)
    assert by_qid["56beb4343aeaaa14008c925c"].cost["answer_llm_completion_tokens"] == count_tokens(
        "He had 136 career sacks"
    )
    assert all(q.cost["answer_ms"] > 0 and q.answer_error is None for q in by_qid.values())
    target = results.targets[0]
    assert target.cost["answer_llm_completion_tokens"] == pytest.approx(sum(c.completion_tokens for c in calls) / 6)
    assert target.config["generation"]["model"] == "reader" and target.config["generation"]["context"] == 3


def test_report_shows_generation(generated_run):
    out, results, _, _ = generated_run
    rows = {row["qid"]: row for row in csv.DictReader((out / "per_query.csv").open())}
    first = rows["56beb4343aeaaa14008c925b"]
    assert (first["answer"], first["exact_match"], first["answer_error"]) == ("308.", "1.0", "")
    assert float(first["answer_llm_prompt_tokens"]) == next(
        q.cost["answer_llm_prompt_tokens"] for q in results.queries if q.qid == "56beb4343aeaaa14008c925b"
    )
    lines = (out / "report.md").read_text().splitlines()
    summary = next(line for line in lines if line.startswith("| target |") and "EM" in line)
    assert "| EM | F1 | Contains |" in summary
    cost = next(line for line in lines if line.startswith("| target |") and "answer_ms / query" in line)
    assert "answer_llm_prompt_tokens / query" in cost and "answer_llm_completion_tokens / query" in cost


def test_one_refused_question_is_that_questions_error(six_questions, tmp_path):
    def refuse_one(messages):
        if "Jared Allen" in messages[-1]["content"].rsplit("Question:", 1)[1]:
            raise RuntimeError("scripted failure")
        return "unknown"

    with (
        LLMDouble(answer=refuse_one) as llm,
        pytest.raises(
            MeasurementFailed, match=r"target bm25: 1 of 6 generated answers failed \(scored as zero; report: "
        ),
    ):
        quality_command(
            QualityRequest(
                dataset=six_questions, targets=["bm25"], out=tmp_path, generate=f"chat@{llm.base_url}?model=reader"
            )
        )
    results = read_results(tmp_path / "results.jsonl")
    failed = [q for q in results.queries if q.answer_error]
    assert [q.qid for q in failed] == ["56beb4343aeaaa14008c925c"] and failed[0].answer is None
    assert results.metric("bm25", "f1").per_query["56beb4343aeaaa14008c925c"] == 0.0
    assert results.end.status == "complete" and results.targets[0].answer_errors == 1


def test_a_chat_server_that_dies_mid_run_fails_the_run(six_questions, tmp_path, monkeypatch, capsys):
    """It answers three questions, then drops every connection: three failed answers are errors in the record,
    the report and the exit code (3: it ran, a measurement failed), like failed queries."""
    answered = []

    def die_after_three(messages):
        if len(answered) == 3:
            raise ConnectionAbortedError("the chat server died")  # the double drops the connection
        answered.append(messages)
        return "unknown"

    out = tmp_path / "o"
    with LLMDouble(answer=die_after_three) as llm:
        monkeypatch.setattr(llm.stub, "handle_error", lambda request, address: None)  # no traceback of its own
        code, stdout, stderr = run_cli(
            [
                "quality",
                "--dataset",
                str(six_questions),
                "-t",
                "bm25",
                "--out",
                str(out),
                "--generate",
                f"chat@{llm.base_url}?model=reader",
            ],
            monkeypatch,
            capsys,
        )
    assert code == 3, stderr
    assert stderr.splitlines()[-1] == (
        f"ragbench: error: target bm25: 3 of 6 generated answers failed (scored as zero; report: {out / 'report.html'})"
    ), stderr
    assert "answer errors" in stdout and stdout.splitlines()[-1] == f"report: {out / 'report.html'}"  # tables first
    results = read_results(out / "results.jsonl")
    assert [(t.name, t.errors, t.answer_errors) for t in results.targets] == [("bm25", 0, 3)]
    assert results.end.status == "complete"
    report = (out / "report.md").read_text()
    assert "**Status: complete, with failures.** Target **bm25**: 3 of 6 generated answers failed." in report
    header = next(line for line in report.splitlines() if line.startswith("| target |") and "answer errors" in line)
    columns = [c.strip() for c in header.strip("|").split("|")]
    row = next(line for line in report.splitlines() if line.startswith("| bm25 |"))
    assert [c.strip() for c in row.strip("|").split("|")][columns.index("answer errors")] == "3"
    assert [c.strip() for c in row.strip("|").split("|")][columns.index("errors")] == "0"
    html = (out / "report.html").read_text()
    assert 'class="bad">' in html and "3 of 6 generated answers failed" in html


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 2, "total_tokens": -3},  # negative
        {"prompt_tokens": 10**30, "completion_tokens": 2, "total_tokens": 10**30 + 2},  # huge
        {"prompt_tokens": "many", "completion_tokens": 2, "total_tokens": 12},  # not a number
        {"prompt_tokens": 10, "completion_tokens": True, "total_tokens": 11},  # a boolean
        {"prompt_tokens": 10.5, "completion_tokens": 2, "total_tokens": 12.5},  # a fraction of a token
        {"prompt_tokens": None, "completion_tokens": None},  # nothing counted
        "12 tokens",  # not an object
    ],
)
def test_invalid_usage_is_without_usage_never_a_figure(usage, six_questions, tmp_path):
    with LLMDouble(answer=lambda messages: "308", usage=lambda true: usage) as llm:
        quality_command(
            QualityRequest(
                dataset=six_questions, targets=["bm25"], out=tmp_path, generate=f"chat@{llm.base_url}?model=reader"
            )
        )
    results = read_results(tmp_path / "results.jsonl")
    for q in results.queries:
        assert q.cost["answer_llm_calls_without_usage"] == 1.0 and q.cost["answer_llm_calls"] == 1.0
        assert not [k for k in q.cost if k.endswith("_tokens")], q.cost
    assert results.targets[0].cost["answer_llm_calls_without_usage"] == 1.0


def test_valid_usage_is_counted_as_sent():
    assert checked_usage({"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10.0, "cached": -1}) == {
        "prompt_tokens": 10,
        "completion_tokens": 0,
        "total_tokens": 10,
    }
    assert checked_usage({"completion_tokens": 7}) == {"completion_tokens": 7}
    assert checked_usage({"prompt_tokens": MAX_TOKENS_PER_CALL + 1}) is None and checked_usage({}) is None


def test_the_meter_counts_invalid_usage_as_without_usage():
    meter = Meter({"llm": "http://127.0.0.1:9"})
    try:
        for usage in (
            {"prompt_tokens": -5, "completion_tokens": 3},
            {"prompt_tokens": "x"},
            {"prompt_tokens": 4, "completion_tokens": 3},
        ):
            meter.begin("llm")
            meter.record("llm", CallRecord("llm", 0.0, 0.1, 200, None, False, None), b"", usage)
    finally:
        meter.close()
    usage = meter.snapshot()["llm"]
    assert (
        usage["calls"],
        usage["calls_without_usage"],
        usage["prompt_tokens"],
        usage["completion_tokens"],
        usage["total_tokens"],
    ) == (3, 2, 4, 3, 7)


def test_a_dead_endpoint_ends_the_run_with_one_line(six_questions, tmp_path):
    with LLMDouble() as llm:
        url = llm.base_url  # the double is stopped: nothing listens there any more
    with pytest.raises(ServerError, match="--generate chat: cannot reach"):
        quality_command(
            QualityRequest(dataset=six_questions, targets=["bm25"], out=tmp_path, generate=f"chat@{url}?model=reader")
        )
    results = read_results(tmp_path / "results.jsonl")
    assert results.end.status == "failed"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("chat@http://h:1/v1", "chat needs a URL and a model"),
        ("chat?model=m", "chat needs a URL and a model"),
        ("chat@http://h:1/v1?model=m&context=0", "context='0' must be a whole number of at least 1"),
        ("chat@http://h:1/v1?model=m&temperature=1", r"unknown option\(s\) temperature"),
        ("native@http://h:1", "native takes no URL"),
        ("judge@http://h:1", "expected chat@URL"),
        ("chat@http://h:1/v1?model=m&key_env=RAGBENCH_TEST_UNSET_KEY", "environment variable RAGBENCH_TEST_UNSET_KEY"),
    ],
)
def test_bad_generate_specs(spec, message, monkeypatch):
    monkeypatch.delenv("RAGBENCH_TEST_UNSET_KEY", raising=False)
    with pytest.raises(UserError, match=message):
        parse_generate(spec)


def test_native_needs_a_target_that_answers_itself(six_questions, tmp_path):
    with pytest.raises(UserError, match="target bm25 does not generate answers itself"):
        quality_command(QualityRequest(dataset=six_questions, targets=["bm25"], out=tmp_path, generate="native"))


def test_generated_measures_need_generate(six_questions, tmp_path):
    with pytest.raises(UserError, match="measure EM scores generated answers: add --generate"):
        quality_command(QualityRequest(dataset=six_questions, targets=["bm25"], out=tmp_path, measures=["EM"]))


def test_cli_flag(six_questions, tmp_path, monkeypatch, capsys):
    with LLMDouble(answer=lambda messages: "308") as llm:
        code, _out, err = run_cli(
            [
                "quality",
                "--dataset",
                str(six_questions),
                "-t",
                "bm25",
                "--out",
                str(tmp_path / "o"),
                "--generate",
                f"chat@{llm.base_url}?model=reader&context=2",
            ],
            monkeypatch,
            capsys,
        )
    assert code == 0, err
    assert (
        read_results(tmp_path / "o" / "results.jsonl")
        .metric("bm25", "exact_match")
        .per_query["56beb4343aeaaa14008c925b"]
        == 1.0
    )
    code, _, err = run_cli(
        [
            "quality",
            "--dataset",
            str(six_questions),
            "-t",
            "bm25",
            "--out",
            str(tmp_path / "p"),
            "--generate",
            "chat@http://127.0.0.1:9/v1",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and err.strip() == (
        "ragbench: error: --generate 'chat@http://127.0.0.1:9/v1': chat needs a URL and "
        "a model (chat@http://host:4000/v1?model=NAME)"
    )


def test_key_from_the_environment_is_sent_and_never_stored(six_questions, tmp_path, monkeypatch):
    monkeypatch.setenv("READER_KEY", "sk-reader-secret-123456")
    with LLMDouble(answer=lambda messages: "308") as llm:
        quality_command(
            QualityRequest(
                dataset=six_questions,
                targets=["bm25"],
                out=tmp_path,
                generate=f"chat@{llm.base_url}?model=reader&key_env=READER_KEY",
            )
        )
        seen = [headers.get("Authorization") for method, _, headers, _ in llm.stub.requests if method == "POST"]
    assert set(seen) == {"Bearer sk-reader-secret-123456"}
    assert "sk-reader-secret-123456" not in (tmp_path / "results.jsonl").read_text()
