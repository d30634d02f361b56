"""Answers against the real LightRAG 1.5.7 (LLM: the deterministic double, through `ragbench meter`):
Answer@k scored on the chunk texts LightRAG returned, and `--generate native` through its `/query`."""

from __future__ import annotations

import json

import pytest

from bench.commands.quality import QualityRequest, quality_command
from bench.results.store import read_results
from bench.targets import lightrag as lightrag_target
from bench.targets import openwebui as openwebui_target
from tests.quality.test_xquad import DPRSimpleTokenizer, dpr_has_answer

pytestmark = pytest.mark.integration

QUESTIONS = 6
SCRIPTED = {  # question -> the double's reply; LightRAG's prompt makes a real LLM append a references section
    "How many points did the Panthers defense surrender?": "308\n\n### References\n\n- [1] xq-00-00.txt",
    "Who registered the most sacks on the team this season?": "Kawann Short led the team.",
}


@pytest.fixture(scope="module")
def xquad_slice(shared_dir, tmp_path_factory):
    """xquad-en's first questions (answers, no qrels) and the paragraphs of their first two articles."""
    source = shared_dir / "datasets" / "xquad-en"
    root = tmp_path_factory.mktemp("xquad-slice")
    docs = [
        d
        for d in map(json.loads, (source / "corpus.jsonl").read_text().splitlines())
        if d["_id"].startswith(("xq-00-", "xq-01-"))
    ]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(
        "\n".join((source / "queries.jsonl").read_text().splitlines()[:QUESTIONS]) + "\n"
    )
    return root, {d["_id"]: d for d in docs}


def scripted(messages):
    asked = messages[-1]["content"]
    return next((reply for question, reply in SCRIPTED.items() if question in asked), "unknown")


@pytest.fixture(scope="module")
def answered(xquad_slice, lightrag_server, meter_url, llm_double, tmp_path_factory):
    root, _ = xquad_slice
    searched = {}
    original = lightrag_target.LightRAGTarget.search

    def spy(self, queries, depth, progress):  # keep what each target returned, chunk texts included
        searched[self.name] = original(self, queries, depth, progress)
        return searched[self.name]

    out = tmp_path_factory.mktemp("lightrag-answers")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LIGHTRAG_API_KEY", lightrag_server.api_key)
        mp.setattr(lightrag_target.LightRAGTarget, "search", spy)
        mp.setattr(llm_double, "answer", scripted)
        calls_before = len(llm_double.calls)
        quality_command(
            QualityRequest(
                dataset=root,
                out=out,
                depth=10,
                generate="native",
                targets=[
                    f"lightrag:naive@{lightrag_server.url}?meter={meter_url}",
                    f"lightrag:mix@{lightrag_server.url}?meter={meter_url}",
                ],
                measures=["Answer@1", "Answer@5", "AnswerMRR@10", "EM", "F1", "Contains"],
            )
        )
        answer_calls = [c for c in llm_double.calls[calls_before:] if c.kind == "other"]
    return read_results(out / "results.jsonl"), searched, answer_calls


def check_answers_scored_on_chunks(results, searched, xquad_slice):
    """Answer@k of each target equals DPR's rule (written independently) on the chunk texts it returned."""
    _, corpus = xquad_slice
    answers = {
        q["_id"]: q["answers"] for q in map(json.loads, (xquad_slice[0] / "queries.jsonl").read_text().splitlines())
    }
    tokenizer = DPRSimpleTokenizer()
    for name, query_results in searched.items():
        for r in query_results:
            assert r.error is None and r.passages
            # A chunk is a piece of one paragraph's text, without the title ingested before it.
            strays = [p for p in r.passages if not any(p in d["text"] for d in corpus.values())]
            assert not strays, strays[:2]
        first = {
            r.qid: next((i for i, p in enumerate(r.passages, 1) if dpr_has_answer(answers[r.qid], p, tokenizer)), None)
            for r in query_results
        }
        for k in (1, 5):
            assert results.metric(name, f"has_answer_{k}").per_query == {
                qid: float(rank is not None and rank <= k) for qid, rank in first.items()
            }
        assert results.metric(name, "has_answer_5").mean > 0.5  # the answers are in these paragraphs


def test_answer_at_k_is_scored_on_the_returned_chunks(answered, xquad_slice):
    results, searched, _ = answered
    check_answers_scored_on_chunks(results, searched, xquad_slice)


def test_openwebui_answer_at_k_on_its_chunks(xquad_slice, openwebui_server, openwebui_key, tmp_path, monkeypatch):
    searched = {}
    original = openwebui_target.OpenWebUITarget.search

    def spy(self, queries, depth, progress):
        searched[self.name] = original(self, queries, depth, progress)
        return searched[self.name]

    monkeypatch.setattr(openwebui_target.OpenWebUITarget, "search", spy)
    quality_command(
        QualityRequest(
            dataset=xquad_slice[0],
            out=tmp_path,
            depth=10,
            targets=[f"openwebui:vector@{openwebui_server.url}?kb=xquad-answers"],
            measures=["Answer@1", "Answer@5"],
        )
    )
    check_answers_scored_on_chunks(read_results(tmp_path / "results.jsonl"), searched, xquad_slice)


def test_native_generation_through_query(answered):
    results, _, answer_calls = answered
    assert [t.name.split("?")[0] for t in results.targets] == ["lightrag:naive", "lightrag:mix"]
    for name in (t.name for t in results.targets):
        by_qid = {q.qid: q for q in results.queries if q.target == name}
        assert by_qid["56beb4343aeaaa14008c925b"].answer == "308"  # the references section is cut off
        assert by_qid["56beb4343aeaaa14008c925f"].answer == "Kawann Short led the team."
        assert by_qid["56beb4343aeaaa14008c925c"].answer == "unknown"
        assert results.metric(name, "exact_match").per_query["56beb4343aeaaa14008c925b"] == 1.0
        assert results.metric(name, "contains_answer").per_query["56beb4343aeaaa14008c925f"] == 1.0
        assert results.metric(name, "exact_match").per_query["56beb4343aeaaa14008c925f"] == 0.0
        assert results.metric(name, "f1").per_query["56beb4343aeaaa14008c925f"] == pytest.approx(
            2 * 0.5 * 1 / 1.5
        )  # "kawann short led team" vs "kawann short"
        for q in by_qid.values():  # the meter counted each question's answer call
            assert q.answer_error is None and q.cost["answer_ms"] > 0
            assert q.cost["answer_llm_calls"] >= 1 and q.cost["answer_llm_completion_tokens"] >= 1
        target = next(t for t in results.targets if t.name == name)
        assert target.config["generation"] == {"kind": "native"}
    # One answer call per question and mode reached the LLM (the double saw them).
    assert len(answer_calls) == 2 * QUESTIONS
