"""DPR has_answer and SQuAD v1.1 EM/F1 on hand-checked cases.

Each expectation below was worked out by hand from the reference definitions (DPR's
dpr/utils/tokenizers.py SimpleTokenizer + dpr/data/qa_validation.py has_answer; SQuAD's
evaluate-v1.1.py), not by running ragbench.
"""

import pytest

from bench.datasets.answers import (
    SEP,
    AnswerSet,
    CorpusAnswers,
    answer_measure,
    derived_qrels,
    exact_match,
    squad_normalize,
    token_f1,
    token_string,
)


def dpr_tokens(text: str) -> tuple[str, ...]:
    """DPR's normalised tokens, read back from the matching string: NFD, SimpleTokenizer, lower-case."""
    joined = token_string(text)
    return tuple(joined[1:-1].split(SEP)) if joined != SEP else ()


@pytest.mark.parametrize(
    "text, tokens",
    [
        # Runs of letters/digits/marks are tokens; every other non-space character is a token on its own.
        ("Super Bowl 50", ("super", "bowl", "50")),
        ("7,000,000 km²", ("7", ",", "000", ",", "000", "km²")),  # ² is a digit (No) in Unicode
        ("U.S. (2016)", ("u", ".", "s", ".", "(", "2016", ")")),
        ("don't", ("don", "'", "t")),
        # NFD: é becomes e + combining acute, which stays inside the token (a mark).
        ("Café", ("cafe\u0301",)),
        ("  tabs\tand\nnewlines ", ("tabs", "and", "newlines")),
        # Each token is lower-cased on its own (DPR): a sigma ending a token is final even where the whole
        # text, lower-cased at once, would continue the word past the apostrophe ("ασ'β").
        ("ΑΣ'Β", ("ας", "'", "β")),  # noqa: RUF001 (Greek capital beta on purpose)
        ("ΟΔΟΣ ΣΑ", ("οδος", "σα")),
        ("a\x00b", ("a", "b")),  # control characters are no tokens
    ],
)
def test_dpr_tokens(text, tokens):
    assert dpr_tokens(text) == tokens


@pytest.mark.parametrize(
    "answer, text, expected",
    [
        ("Denver Broncos", "The Denver Broncos defeated the Carolina Panthers.", True),
        ("denver broncos", "THE DENVER BRONCOS", True),  # case-insensitive
        ("Broncos", "the Broncos'", True),  # punctuation is a separate token
        ("Bronco", "the Broncos won", False),  # whole tokens only, no substring match
        ("Broncos won", "Broncos, won", False),  # the comma token breaks the sequence
        ("Broncos, won", "Broncos , won", True),  # spacing around punctuation does not matter
        ("Café", "the cafe\u0301 opened", True),  # composed vs decomposed: equal after NFD
        ("Café", "the cafe opened", False),  # accents are kept: é is not e
        ("São Paulo", "Sao Paulo", False),
        ("the Panthers", "Panthers", False),  # articles are NOT removed by DPR (unlike SQuAD)
        ("308", "just 308 points", True),
        ("308", "just 3080 points", False),
        (
            "7,000,000 square kilometres (2,70",
            "7,000,000 square kilometres (2,700,000 sq mi)",
            False,
        ),  # a cut-off answer (xquad-en)
        ("1.5", "grew 1.5 percent", True),
        ("1.5", "grew 1 . 5 percent", True),  # DPR tokens: 1 / . / 5 either way
        ("1.5", "grew 15 percent", False),
    ],
)
def test_has_answer_plain(answer, text, expected):
    assert AnswerSet.of([answer]).found_in(text) is expected


@pytest.mark.parametrize(
    "answer, text, expected",
    [
        ("/19[0-9]{2}/", "It opened in 1931.", True),
        ("/19[0-9]{2}/", "It opened in 2031.", False),
        ("/Denver Broncos?/", "the denver bronco", True),  # case-insensitive like DPR's regex_match
        ("/^abc$/", "x\nabc\ny", True),  # MULTILINE
        ("/café/", "CAFÉ", True),  # pattern and text both NFD
    ],
)
def test_has_answer_regex(answer, text, expected):
    assert AnswerSet.of([answer]).found_in(text) is expected


def test_any_answer_counts_and_empty_sets_never_match():
    assert AnswerSet.of(["nothing", "Paris"]).found_in("in Paris")
    assert not AnswerSet.of([]).found_in("anything")


def test_corpus_answers_match_a_scan():
    texts = {"a": "Super Bowl 50 was in 2016.", "b": "The Broncos won Super Bowl 50.", "c": "Bowl games."}
    index = CorpusAnswers(texts)
    for answers in (["Super Bowl 50"], ["Bowl"], ["2016"], ["/bowl \\d+/"], ["missing"], ["Broncos", "2016"]):
        expected = {d for d, t in texts.items() if AnswerSet.of(answers).found_in(t)}
        assert index.documents_with(AnswerSet.of(answers)) == expected
    assert derived_qrels({"q1": ["Broncos"], "q2": ["missing"]}, texts) == {"q1": {"b": 1}}


@pytest.mark.parametrize(
    "flags, k, has, rr",
    [
        ([False, True, False], 1, 0.0, 0.0),
        ([False, True, False], 2, 1.0, 0.5),
        ([False, False, True], 5, 1.0, 1 / 3),
        ([], 5, 0.0, 0.0),  # failed or empty query
        ([True], 20, 1.0, 1.0),
    ],
)
def test_answer_measures(flags, k, has, rr):
    assert answer_measure("has_answer", k, flags) == has
    assert answer_measure("answer_recip_rank", k, flags) == pytest.approx(rr)


@pytest.mark.parametrize(
    "text, normalized",
    [
        ("The Denver Broncos!", "denver broncos"),
        ("an apple a day", "apple day"),
        ("Theater", "theater"),  # "the" only as a whole word
        ("  1,000  people ", "1000 people"),  # punctuation removed, digits joined
        ("U.S.A.", "usa"),
        ("Café", "café"),  # SQuAD keeps accents (no Unicode normalisation)
    ],
)
def test_squad_normalize(text, normalized):
    assert squad_normalize(text) == normalized


@pytest.mark.parametrize(
    "prediction, references, em, f1",
    [
        ("Denver Broncos", ["Denver Broncos"], 1.0, 1.0),
        ("the Denver Broncos.", ["Denver Broncos"], 1.0, 1.0),
        ("Broncos", ["Denver Broncos"], 0.0, 2 * 1.0 * 0.5 / 1.5),  # precision 1, recall 1/2
        ("Denver Broncos team", ["Broncos"], 0.0, 0.5),  # precision 1/3, recall 1 -> 2/3*... = 0.5
        ("Carolina", ["Denver Broncos", "Carolina Panthers"], 0.0, 2 / 3),  # max over references
        ("1,000", ["1000"], 1.0, 1.0),
        ("nothing alike", ["Denver Broncos"], 0.0, 0.0),
        ("a the an", ["the"], 1.0, 0.0),  # both normalise to "": equal strings, but no common token
        ("It was 1931", ["/19[0-9]{2}/"], 0.0, 0.0),  # a regex reference must span the whole prediction
        (" 1931 ", ["/19[0-9]{2}/"], 1.0, 1.0),
    ],
)
def test_squad_em_f1(prediction, references, em, f1):
    assert exact_match(prediction, references) == em
    assert token_f1(prediction, references) == pytest.approx(f1)
