"""Distractors: synthetic text from the dataset's own vocabulary and lengths, or another dataset's documents."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.core.errors import UserError
from bench.datasets import load_dataset
from bench.datasets.distractors import PREFIX, Distractors, parse_distractors
from bench.datasets.model import Dataset, DatasetFormat, Document


def _dataset(texts: list[str]) -> Dataset:
    corpus = {f"d{i}": Document(f"d{i}", "", t) for i, t in enumerate(texts)}
    return Dataset("toy", corpus, {"q0": "alpha"}, {"q0": {"d0": 1}}, "toy", DatasetFormat.BEIR)


TOY = _dataset(["alpha beta beta gamma", "beta " * 30, "gamma delta " * 5, "alpha " * 9])


def test_synthetic_distractors_are_deterministic_and_a_prefix_of_a_longer_draw():
    source = parse_distractors("synthetic:3")
    first = Distractors(source, TOY).first(50)
    again = Distractors(source, TOY).first(80)
    assert first == again[:50]  # rung k's distractors are the first of rung k+1's, run after run
    other = Distractors(parse_distractors("synthetic:4"), TOY).first(50)
    assert [d.text for d in other] != [d.text for d in first]
    assert len({d.doc_id for d in again}) == 80 and not {d.doc_id for d in again} & set(TOY.corpus)


def test_synthetic_text_draws_the_corpus_words_by_frequency_at_its_lengths():
    made = Distractors(parse_distractors("synthetic:0"), TOY).first(2000)
    lengths = Counter(len(d.text.split()) for d in made)
    own = [len(d.full_text.split()) for d in TOY.corpus.values()]
    assert set(lengths) <= set(own)  # every length is one of the corpus' own
    for length in own:  # each drawn about as often as the corpus has it (1 in 4 here)
        assert lengths[length] / len(made) == pytest.approx(own.count(length) / len(own), abs=0.05)
    words = Counter(w for d in made for w in d.text.split())
    corpus_words = Counter(w for d in TOY.corpus.values() for w in d.full_text.split())
    assert set(words) <= set(corpus_words)
    total, corpus_total = sum(words.values()), sum(corpus_words.values())
    for word, count in corpus_words.items():
        assert words[word] / total == pytest.approx(count / corpus_total, abs=0.02)


def test_a_dataset_source_gives_its_documents_with_prefixed_ids(tiny):
    distractors = Distractors(parse_distractors(str(tiny)), TOY)
    assert distractors.capacity == 4
    found = distractors.first(3)
    assert [d.doc_id for d in found] == [PREFIX + d for d in list(load_dataset(tiny).corpus)[:3]]
    with pytest.raises(UserError, match="holds 4 documents, 5 asked"):
        distractors.first(5)


@pytest.mark.parametrize("text", ["synthetic:", "synthetic:x", "synthetic:-1"])
def test_a_bad_synthetic_seed_is_one_line(text):
    with pytest.raises(UserError, match="synthetic:SEED"):
        parse_distractors(text)


def test_a_missing_dataset_source_is_refused_before_reading(tmp_path):
    with pytest.raises(UserError, match="no such file or folder"):
        parse_distractors(str(tmp_path / "nothing"))


def test_lengths_come_from_the_corpus_not_a_fixed_size():
    long = _dataset(["word " * n for n in (5, 500)])
    made = Distractors(parse_distractors("synthetic:1"), long).first(200)
    assert {len(d.text.split()) for d in made} == {5, 500}


def test_a_dataset_sources_document_with_the_text_of_one_of_the_datasets_own_is_left_out(tmp_path):
    from tests.harness.beir import write_beir

    source = write_beir(
        tmp_path / "src", {"a": "alpha beta beta gamma", "b": "other text"}, {"q": "x"}, [("q", "a", 1)]
    )
    found = Distractors(parse_distractors(str(source)), TOY).first(1)
    assert [d.doc_id for d in found] == [PREFIX + "b"]  # "a" is TOY's d0 under another id: it would be relevant
