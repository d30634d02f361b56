"""Documents that grow a knowledge base without answering any of its queries: distractors.

`synthetic:SEED` makes any number of them from the dataset's own vocabulary (its words drawn by their frequency
in the corpus) and its document lengths (each length drawn from the corpus' lengths in words): text that looks,
to a lexical or dense index, like the corpus in bulk, and answers nothing. Document i depends only on the seed
and i, so a ladder's rung k holds the first documents of rung k+1 and a resumed run makes the same ones.
Any dataset ragbench reads is a source too (builtin:python-docs: tens of thousands of installed docstrings): its
documents in file order, its queries and qrels ignored, ids prefixed `distractor-` so they never collide with the
dataset's own, and a document whose text is one of the dataset's own left out (it would be relevant).

>>> source = parse_distractors("synthetic:7")
>>> str(source.kind), source.seed
('synthetic', 7)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from bench.core.dataset_blocks import DistractorSourceBlock
from bench.core.errors import UserError
from bench.datasets.model import Dataset, Document

SYNTHETIC = "synthetic:"
PREFIX = "distractor-"  # a dataset source's ids: never a dataset's own
OBJECT_BYTES = 250  # a Document, its id and its text string's header, as CPython lays them out
MAX_SEED = 2**63 - 1  # any seed a user types fits; a longer digit string is a typo


class DistractorKind(StrEnum):
    """Where distractors come from: made from the dataset's vocabulary, or another dataset's documents."""

    SYNTHETIC = "synthetic"
    DATASET = "dataset"


@dataclass(frozen=True)
class DistractorSource:
    """`--distractors` parsed: `synthetic:SEED`, or the path (or builtin:NAME) of a dataset."""

    text: str
    kind: DistractorKind
    seed: int = 0
    path: str = ""


def parse_distractors(text: str) -> DistractorSource:
    """`synthetic:SEED` (SEED a whole number ≥ 0) or a dataset; the dataset is checked, not read."""
    if text.startswith(SYNTHETIC):
        seed = text[len(SYNTHETIC) :]
        # ASCII digits only (str.isdigit takes ², ٣ ...: int() refuses those), and a seed numpy takes
        if not (seed.isascii() and seed.isdigit() and len(seed) <= 19 and int(seed) <= MAX_SEED):
            raise UserError(f"--distractors {text!r}: expected synthetic:SEED with SEED a whole number 0 to {MAX_SEED}")
        return DistractorSource(text, DistractorKind.SYNTHETIC, seed=int(seed))
    from bench.datasets import check_dataset_path

    check_dataset_path(text)
    return DistractorSource(text, DistractorKind.DATASET, path=text)


class Distractors:
    """The first `count` distractors of a source, made or read once; `capacity` None: any number."""

    def __init__(self, source: DistractorSource, dataset: Dataset):
        self.source = source
        self._synthetic = _Synthetic(source.seed, dataset) if source.kind == DistractorKind.SYNTHETIC else None
        self._listed: list[Document] = [] if self._synthetic else _from_dataset(source.path, dataset)

    @property
    def capacity(self) -> int | None:
        return None if self._synthetic else len(self._listed)

    def first(self, count: int) -> list[Document]:
        return self.documents(0, count)

    def documents(self, start: int, stop: int) -> list[Document]:
        """Distractors start..stop-1 (document i is the same whichever slice makes it)."""
        if self._synthetic is not None:
            return [self._synthetic.document(i) for i in range(start, stop)]
        if stop > len(self._listed):
            raise UserError(f"--distractors {self.source.text}: holds {len(self._listed)} documents, {stop} asked")
        return self._listed[start:stop]

    def bytes_each(self) -> float:
        """About the memory one more distractor takes (a dataset source's are read already: none)."""
        return self._synthetic.bytes_each() if self._synthetic is not None else 0.0

    def describe(self) -> DistractorSourceBlock:
        found = DistractorSourceBlock(source=self.source.text, kind=self.source.kind)
        if self._synthetic is not None:
            found |= self._synthetic.describe()
        else:
            found["documents"] = len(self._listed)
        return found


def _from_dataset(path: str, dataset: Dataset) -> list[Document]:
    from bench.datasets import load_dataset

    source = load_dataset(path)
    own = {" ".join(d.text.split()) for d in dataset.corpus.values()}
    # a document whose text is one of the dataset's own would be relevant under another id: left out
    found = [
        Document(PREFIX + d.doc_id, d.title, d.text)
        for d in source.corpus.values()
        if " ".join(d.text.split()) not in own
    ]
    clash = next((d.doc_id for d in found if d.doc_id in dataset.corpus), None)
    if clash is not None:
        raise UserError(f"--distractors {path}: document {clash!r} has the id of one of {dataset.source}'s own")
    return found


class _Synthetic:
    """Text drawn from the dataset's word frequencies, at lengths drawn from its documents' lengths in words."""

    def __init__(self, seed: int, dataset: Dataset):
        counts = Counter(word for doc in dataset.corpus.values() for word in doc.full_text.split())
        if not counts:
            raise UserError(f"--distractors synthetic:{seed}: {dataset.source} has no words to draw from")
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))  # a fixed order: deterministic draws
        self.seed = seed
        self.words = [word for word, _ in ranked]
        weights = np.asarray([n for _, n in ranked], dtype=float)
        self.cumulative = np.cumsum(weights) / weights.sum()
        self.lengths = np.asarray(sorted(max(len(d.full_text.split()), 1) for d in dataset.corpus.values()))

    def document(self, i: int) -> Document:
        rng = np.random.default_rng((self.seed, i))
        length = int(self.lengths[rng.integers(len(self.lengths))])
        picks = np.searchsorted(self.cumulative, rng.random(length), side="right")
        words = [self.words[min(int(p), len(self.words) - 1)] for p in picks]
        return Document(f"synthetic-{self.seed}-{i}", "", " ".join(words))

    def bytes_each(self) -> float:
        """A made document's text (its mean length in words, each word its mean size by frequency and a space) and
        the Python objects around it."""
        sizes = np.asarray([len(w.encode()) + 1 for w in self.words], dtype=float)
        weights = np.diff(self.cumulative, prepend=0.0)
        return float(np.mean(self.lengths)) * float(np.sum(sizes * weights)) + OBJECT_BYTES

    def describe(self) -> DistractorSourceBlock:
        return {
            "seed": self.seed,
            "vocabulary": len(self.words),
            "length_words": {"min": int(self.lengths[0]), "median": float(np.median(self.lengths))},
            "made": "words drawn by their corpus frequency; lengths drawn from the corpus' documents (words)",
        }
