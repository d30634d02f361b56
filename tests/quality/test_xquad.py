"""Answer@k on xquad-en through `quality`, checked query by query against an independent implementation:
DPR's has_answer written out here as DPR's code has it (SimpleTokenizer over spans, then a sliding
window), reading the corpus, the answers and the run files with plain json — no ragbench code.
"""

import json
import unicodedata

import pytest
import regex

from bench.commands.quality import QualityRequest, quality_command
from bench.results.store import read_results

MEASURES = ["Answer@1", "Answer@5", "Answer@20", "AnswerMRR@10"]

# Both tests read one quality run of bm25 and dense over xquad-en: the corpus is encoded.
pytestmark = pytest.mark.slow


class DPRSimpleTokenizer:
    """dpr/utils/tokenizers.py SimpleTokenizer: alphanumeric runs or single non-space characters."""

    ALPHA_NUM = r"[\p{L}\p{N}\p{M}]+"
    NON_WS = r"[^\p{Z}\p{C}]"

    def __init__(self):
        self._regexp = regex.compile(
            f"({self.ALPHA_NUM})|({self.NON_WS})", flags=regex.IGNORECASE + regex.UNICODE + regex.MULTILINE
        )

    def words_uncased(self, text):
        matches = list(self._regexp.finditer(text))
        return [text[m.start() : m.end()].lower() for m in matches]


def dpr_has_answer(answers, text, tokenizer):
    """dpr/data/qa_validation.py has_answer, match_type 'string' (and 'regex' for /.../ answers)."""
    text = unicodedata.normalize("NFD", text)
    words = tokenizer.words_uncased(text)
    for answer in answers:
        if len(answer) >= 2 and answer[0] == "/" and answer[-1] == "/":
            import re

            if re.compile(
                unicodedata.normalize("NFD", answer[1:-1]), flags=re.IGNORECASE + re.UNICODE + re.MULTILINE
            ).search(text):
                return True
            continue
        answer_words = tokenizer.words_uncased(unicodedata.normalize("NFD", answer))
        for i in range(0, len(words) - len(answer_words) + 1):
            if answer_words == words[i : i + len(answer_words)]:
                return True
    return False


def trec_ranked(run_path):
    """qid -> doc ids in trec_eval's order (score desc, then docno desc)."""
    rows = {}
    for line in run_path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()[:6]
        rows.setdefault(qid, []).append((float(score), doc))
    return {qid: [doc for _, doc in sorted(docs, reverse=True)] for qid, docs in rows.items()}


@pytest.fixture(scope="module")
def xquad(shared_dir):
    return shared_dir / "datasets" / "xquad-en"


@pytest.fixture(scope="module")
def quality_run(xquad, tmp_path_factory):
    out = tmp_path_factory.mktemp("xquad-answers")
    quality_command(QualityRequest(dataset=xquad, targets=["bm25", "dense"], out=out, measures=["nDCG@10", *MEASURES]))
    return out, read_results(out / "results.jsonl")


def test_answer_at_k_equals_independent_dpr_rule(xquad, quality_run):
    out, results = quality_run
    corpus = {d["_id"]: d["text"] for d in map(json.loads, (xquad / "corpus.jsonl").read_text().splitlines())}
    answers = {q["_id"]: q["answers"] for q in map(json.loads, (xquad / "queries.jsonl").read_text().splitlines())}
    tokenizer = DPRSimpleTokenizer()
    figures = {}
    for target in ("bm25", "dense"):
        ranked = trec_ranked(out / "runs" / f"{target}.trec")
        first_hit = {}
        for qid, refs in answers.items():
            docs = ranked.get(qid, [])[:20]
            first_hit[qid] = next(
                (r for r, d in enumerate(docs, start=1) if dpr_has_answer(refs, corpus[d], tokenizer)), None
            )
        for k in (1, 5, 20):
            expected = {qid: float(r is not None and r <= k) for qid, r in first_hit.items()}
            record = results.metric(target, f"has_answer_{k}")
            assert record.per_query == expected, f"{target} Answer@{k}"
            assert record.mean == sum(expected.values()) / len(expected)
            assert record.relevance == "answers"
            figures[f"{target} Answer@{k}"] = record.mean
        expected_rr = {qid: (1 / r if r is not None and r <= 10 else 0.0) for qid, r in first_hit.items()}
        assert results.metric(target, "answer_recip_rank_10").per_query == pytest.approx(expected_rr, abs=0)
        assert results.metric(target, "ndcg_cut_10").relevance == "qrels"  # side by side with the qrels measures
    print(
        "\nxquad-en (1190 questions, 240 paragraphs):",
        ", ".join(f"{name} {value:.4f}" for name, value in figures.items()),
    )
    # Sanity on the figures themselves: bm25 finds the answer for most questions by rank 20.
    assert figures["bm25 Answer@1"] <= figures["bm25 Answer@5"] <= figures["bm25 Answer@20"]
    assert figures["bm25 Answer@20"] > 0.9


def test_answer_measures_are_compared_for_significance(quality_run):
    _, results = quality_run
    compared = {c.measure for c in results.comparisons}
    assert {"has_answer_5", "has_answer_20", "answer_recip_rank_10"} <= compared
    pair = next(c for c in results.comparisons if c.measure == "has_answer_5")
    a = results.metric(pair.a, "has_answer_5").per_query
    b = results.metric(pair.b, "has_answer_5").per_query
    assert pair.n == len(a) == 1190
    assert pair.mean_diff == pytest.approx(sum(b.values()) / len(b) - sum(a.values()) / len(a))
