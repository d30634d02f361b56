"""BM25 over the corpus in-process (`bm25`): bm25s' Lucene BM25 over title + text, lower-cased, English stopwords
(bm25s' list), Snowball English stemmer (PyStemmer); `?k1=&b=&stemmer=&stopwords=` change them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from bench.core.progress import ProgressFactory
from bench.datasets.model import Dataset
from bench.targets.base import Hit, QueryResult, batch_results
from bench.targets.params import choice_param, float_param
from bench.targets.vector_index import memory_mapped_bm25

OFF = "none"  # `stemmer=none` stems no word, `stopwords=none` keeps every word

# bm25s' stopword lists, by the names its tokenizer takes; OFF keeps every word.
STOPWORDS = [
    "english",
    "english_plus",
    "german",
    "dutch",
    "french",
    "spanish",
    "portuguese",
    "italian",
    "russian",
    "swedish",
    "norwegian",
    "chinese",
    "turkish",
    "korean",
    "danish",
    OFF,
]


@dataclass(frozen=True)
class BM25Settings:
    k1: float = 1.5
    b: float = 0.75
    stemmer: str = "english"  # a Snowball algorithm of PyStemmer, or OFF
    stopwords: str = "english"  # one of STOPWORDS

    @classmethod
    def from_params(cls, params: dict[str, str], spec: str) -> BM25Settings:
        """`k1`, `b`, `stemmer`, `stopwords` from a target spec, checked; the rest default."""
        import Stemmer

        default = cls()
        return cls(
            k1=float_param(params, "k1", default.k1, spec, 0.0, 100.0),
            b=float_param(params, "b", default.b, spec, 0.0, 1.0),
            stemmer=choice_param(params, "stemmer", default.stemmer, spec, [*Stemmer.algorithms(), OFF]),
            stopwords=choice_param(params, "stopwords", default.stopwords, spec, STOPWORDS),
        )


BM25_PARAMS = {"k1", "b", "stemmer", "stopwords"}


class Bm25Description(TypedDict):
    """The BM25 engine's `describe()`."""

    engine: str
    method: str
    k1: float
    b: float
    stemmer: str  # none | snowball-LANGUAGE
    stopwords: str  # none | bm25s LANGUAGE
    fields: str


class BM25Engine:
    def __init__(self, name: str = "bm25", settings: BM25Settings = BM25Settings()):
        self.name = name
        self.settings = settings
        self._retriever: Any = None  # a bm25s.BM25 once prepared (bm25s ships no type information)
        self._doc_ids: list[str] = []

    def _tokenize(self, texts: list[str], return_ids: bool) -> Any:
        import bm25s
        import Stemmer

        stemmer = None if self.settings.stemmer == OFF else Stemmer.Stemmer(self.settings.stemmer)
        stopwords = None if self.settings.stopwords == OFF else self.settings.stopwords
        return bm25s.tokenize(
            texts, lower=True, stopwords=stopwords, stemmer=stemmer, return_ids=return_ids, show_progress=False
        )

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        import bm25s

        advance = progress(f"{self.name}: indexing", len(dataset.corpus))
        self._doc_ids = list(dataset.corpus)
        tokens = self._tokenize([d.full_text for d in dataset.corpus.values()], return_ids=True)
        retriever = bm25s.BM25(k1=self.settings.k1, b=self.settings.b, method="lucene")
        retriever.index(tokens, show_progress=False)
        del tokens
        self._retriever = memory_mapped_bm25(retriever)
        advance(len(dataset.corpus))

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        advance = progress(f"{self.name}: querying", len(queries))
        qids = list(queries)
        tokens = self._tokenize([queries[q] for q in qids], return_ids=False)
        k = min(depth, len(self._doc_ids))
        indices, scores = self._retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        # BM25 gives non-matching documents score 0; they are not retrieved (as in Lucene/Pyserini).
        hits = [
            [Hit(self._doc_ids[i], float(s)) for i, s in zip(row_i, row_s) if s > 0]
            for row_i, row_s in zip(indices, scores)
        ]
        advance(len(qids))
        return batch_results(qids, hits)

    def describe(self) -> Bm25Description:
        stemmer = OFF if self.settings.stemmer == OFF else f"snowball-{self.settings.stemmer}"
        stopwords = OFF if self.settings.stopwords == OFF else f"bm25s {self.settings.stopwords}"
        return {
            "engine": "bm25s",
            "method": "lucene",
            "k1": self.settings.k1,
            "b": self.settings.b,
            "stemmer": stemmer,
            "stopwords": stopwords,
            "fields": "title + text",
        }

    def close(self) -> None:
        pass
