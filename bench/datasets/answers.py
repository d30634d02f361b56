"""Reference answers: DPR's answer-containment rule for retrieved texts, SQuAD v1.1's scores for generated ones.

Retrieval (DPR's `has_answer`, dpr/data/qa_validation.py): a text holds an answer when the answer's tokens
occur in the text's tokens as a contiguous sequence, both after Unicode NFD, DPR's SimpleTokenizer (runs of
letters, marks and digits, or single other non-space characters) and lower-casing. An answer written
`/pattern/` is a regular expression searched in the NFD text (case-insensitive, as DPR's CuratedTREC mode).

Generation (SQuAD v1.1's evaluate-v1.1.py): lower-case, punctuation removed, articles a/an/the removed,
whitespace collapsed; exact match and token F1, each the maximum over the reference answers.

>>> AnswerSet.of(["Denver Broncos"]).found_in("The denver broncos won.")
True
>>> AnswerSet.of(["/19[0-9]{2}/"]).found_in("It opened in 1931.")
True
>>> exact_match("The Broncos!", ["Broncos"]), round(token_f1("Denver Broncos team", ["Broncos"]), 3)
(1.0, 0.5)
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass

import regex

# DPR's SimpleTokenizer: alphanumeric runs (letters, digits, combining marks) or one non-space character.
_DPR_TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]")
# Tokens are kept as one string, each token between two NULs: a token sequence occurs in a text exactly when
# its string is a substring of the text's (C-speed `in` instead of DPR's Python sliding window). NUL is never
# part of a token (it is a control character), and it is neither cased nor case-ignorable, so lower-casing
# the whole string lower-cases each token exactly as DPR's per-token `.lower()` (Greek final sigma included).
SEP = "\0"


def token_string(text: str) -> str:
    """DPR's normalised tokens of `text` (NFD, SimpleTokenizer, lower-case), NUL-delimited: `\0a\0b\0`."""
    tokens = _DPR_TOKEN.findall(unicodedata.normalize("NFD", text))
    return (SEP + SEP.join(tokens) + SEP).lower() if tokens else SEP


def is_regex_answer(answer: str) -> bool:
    return len(answer) >= 2 and answer.startswith("/") and answer.endswith("/")


def compile_answer_regex(answer: str) -> re.Pattern[str]:
    """The pattern of a `/pattern/` answer, compiled as DPR's regex_match does; `re.error` when invalid."""
    return re.compile(unicodedata.normalize("NFD", answer[1:-1]), flags=re.IGNORECASE | re.UNICODE | re.MULTILINE)


@dataclass(frozen=True)
class AnswerSet:
    """One question's reference answers, compiled once."""

    sequences: tuple[str, ...]  # token strings (`token_string`) of the plain answers
    patterns: tuple[re.Pattern[str], ...]  # the `/regex/` answers

    @classmethod
    def of(cls, answers: list[str]) -> AnswerSet:
        plain = [a for a in answers if not is_regex_answer(a)]
        sequences = tuple(t for t in (token_string(a) for a in plain) if t != SEP)
        return cls(sequences, tuple(compile_answer_regex(a) for a in answers if is_regex_answer(a)))

    def found_in(self, text: str) -> bool:
        """DPR has_answer on one text."""
        return self.found_in_tokens(token_string(text) if self.sequences else SEP, text)

    def found_in_tokens(self, tokens: str, text: str) -> bool:
        """`found_in` with the text's token string already computed (shared by every question)."""
        if any(seq in tokens for seq in self.sequences):
            return True
        if self.patterns:
            nfd = unicodedata.normalize("NFD", text)
            return any(p.search(nfd) for p in self.patterns)
        return False


class TokenCache:
    """Token strings per distinct text: a corpus document is tokenized once, however many questions see it."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = token_string(text)
        return tokens


class CorpusAnswers:
    """Which corpus documents hold a question's answer (DPR's rule on each document's text, title excluded).

    An inverted index from token to documents narrows each answer to the documents holding its rarest
    token, so a set of thousands of questions is checked without a scan per question.
    """

    def __init__(self, texts: dict[str, str]):
        self.texts = texts
        self.tokens = {doc_id: token_string(text) for doc_id, text in texts.items()}
        self.postings: dict[str, set[str]] = {}
        for doc_id, tokens in self.tokens.items():
            for token in set(tokens.split(SEP)):
                self.postings.setdefault(token, set()).add(doc_id)

    def documents_with(self, answers: AnswerSet) -> set[str]:
        found: set[str] = set()
        for seq in answers.sequences:
            candidates = min((self.postings.get(t, set()) for t in set(seq[1:-1].split(SEP))), key=len)
            found.update(d for d in candidates if seq in self.tokens[d])
        if answers.patterns:
            found.update(
                d
                for d, text in self.texts.items()
                if d not in found and AnswerSet((), answers.patterns).found_in_tokens(SEP, text)
            )
        return found


def answer_flags(answers: AnswerSet, texts: list[str], cache: TokenCache) -> list[bool]:
    """For each retrieved text in rank order: does it hold a reference answer?"""
    return [answers.found_in_tokens(cache(t) if answers.sequences else SEP, t) for t in texts]


class AnswerJudge:
    """A set's reference answers, compiled once, judging every target's returned texts and generated answers;
    keeps both per target until scoring."""

    def __init__(self, answers: dict[str, list[str]]):
        self.references = {qid: refs for qid, refs in answers.items() if refs}
        self.sets = {qid: AnswerSet.of(refs) for qid, refs in self.references.items()}
        self.cache = TokenCache()
        self.flags: dict[str, dict[str, list[bool]]] = {}  # target -> qid -> flags of its texts in rank order
        self.generated: dict[str, dict[str, str | None]] = {}  # target -> qid -> generated answer (None: failed)

    def judge(self, target: str, texts: dict[str, list[str]]) -> None:
        self.flags[target] = {
            qid: answer_flags(self.sets[qid], t, self.cache) for qid, t in texts.items() if qid in self.sets
        }

    def scores(self, target: str, family: str, k: int | None) -> dict[str, float]:
        """qid -> value for every answered query; one the target failed or left empty scores zero."""
        if family in ("exact_match", "f1", "contains_answer"):
            answers = self.generated.get(target, {})
            return {qid: self._generated_score(family, qid, answers.get(qid)) for qid in sorted(self.sets)}
        flags = self.flags.get(target, {})
        return {qid: answer_measure(family, k or 0, flags.get(qid, [])) for qid in sorted(self.sets)}

    def _generated_score(self, family: str, qid: str, answer: str | None) -> float:
        if answer is None:
            return 0.0
        if family == "exact_match":
            return exact_match(answer, self.references[qid])
        if family == "f1":
            return token_f1(answer, self.references[qid])
        return float(self.sets[qid].found_in(answer))  # contains: DPR's rule, as for retrieved texts


# -- SQuAD v1.1 ---------------------------------------------------------------------------------------

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """SQuAD v1.1's normalize_answer: lower, drop punctuation, drop articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _f1(prediction: str, reference: str) -> float:
    pred, ref = squad_normalize(prediction).split(), squad_normalize(reference).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _regex_em(prediction: str, answer: str) -> float:
    """A `/pattern/` reference has no tokens: it matches when it spans the whole (stripped) prediction."""
    return float(compile_answer_regex(answer).fullmatch(unicodedata.normalize("NFD", prediction.strip())) is not None)


def exact_match(prediction: str, references: list[str]) -> float:
    """1.0 when the normalised prediction equals a normalised reference (SQuAD v1.1), else 0.0."""
    return max(
        (
            _regex_em(prediction, r) if is_regex_answer(r) else float(squad_normalize(prediction) == squad_normalize(r))
            for r in references
        ),
        default=0.0,
    )


def token_f1(prediction: str, references: list[str]) -> float:
    """SQuAD token F1, the maximum over the references (a `/pattern/` reference scores as its exact match)."""
    return max(
        (_regex_em(prediction, r) if is_regex_answer(r) else _f1(prediction, r) for r in references), default=0.0
    )


# -- measures on the flags of a ranking ------------------------------------------------------------


def answer_measure(family: str, k: int, flags: list[bool]) -> float:
    """`has_answer` (Answer@k: 1 when the top k hold an answer) or `answer_recip_rank` (AnswerMRR@k)."""
    first = next((rank for rank, hit in enumerate(flags[:k], start=1) if hit), None)
    if family == "has_answer":
        return 0.0 if first is None else 1.0
    if family == "answer_recip_rank":
        return 0.0 if first is None else 1.0 / first
    raise ValueError(f"not an answer measure: {family}")


def derived_qrels(answers: dict[str, list[str]], texts: dict[str, str]) -> dict[str, dict[str, int]]:
    """Binary judgments from answers: a document is relevant when its text (title excluded) holds one.

    Questions whose answer occurs in no document get no judgments, so ranking measures skip them
    (`datasets check` lists them); Answer@k still counts them, as zero.
    """
    index = CorpusAnswers(texts)
    qrels = {}
    for qid, refs in answers.items():
        found = index.documents_with(AnswerSet.of(refs))
        if found:
            qrels[qid] = dict.fromkeys(sorted(found), 1)
    return qrels
