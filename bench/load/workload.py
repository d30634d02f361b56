"""What load sends: texts (from --texts or a dataset's corpus), queries for rerank, optional fixed token lengths.

Without --texts or --dataset the demo's data set is used (numpy's docstrings, built at run time).
`--lengths N` cuts texts of exactly N tokens (with a tokenizer) or N words (without one) from the running corpus,
so a sweep can show how latency grows with input length. Token counts for tokens/s come from the server when it says
(TEI's `x-compute-tokens`), else from the tokenizer here, else from words: the record says which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import UserError
from bench.datasets.texts import LengthUnit, Tokenizer, read_texts, word_counts

DISTINCT_REQUESTS = 64  # a ring of different bodies per point, replayed: no server cache sees one text twice in a row
MAX_SOURCE_TEXTS = 4096


@dataclass
class Workload:
    texts: list[str]
    queries: list[str]
    source: str
    count_tokens: Callable[[list[str]], list[int]]
    tokens_source: LengthUnit
    # Cuts by length, made once: cutting re-counts tokens hundreds of times (2.5-4 s on a busy 2-core machine),
    # and a sweep or a sizing run asks for the same length at every point.
    cuts: dict[int, Workload] = field(default_factory=dict, repr=False, compare=False)

    def with_length(self, length: int | None) -> Workload:
        """Texts of exactly `length` tokens (words without a tokenizer), cut from the running corpus."""
        if length is None:
            return self
        if length not in self.cuts:
            self.cuts[length] = self._cut_to(length)
        return self.cuts[length]

    def _cut_to(self, length: int) -> Workload:
        words = " ".join(self.texts).split()
        need = DISTINCT_REQUESTS * 4
        texts: list[str] = []
        position = 0
        for _ in range(need):
            if position + length >= len(words):
                position = 0
            by_tokens = self.tokens_source == LengthUnit.TOKENIZER
            cut = _cut(words, position, length, self.count_tokens if by_tokens else None)
            texts.append(" ".join(words[position : position + cut]))
            position += cut
        return Workload(
            texts,
            self.queries,
            f"{self.source}, {length}-{'token' if self.tokens_source == LengthUnit.TOKENIZER else 'word'} cuts",
            self.count_tokens,
            self.tokens_source,
        )

    def embed_batches(self, batch: int) -> list[list[str]]:
        n = len(self.texts)
        return [[self.texts[(r * batch + j) % n] for j in range(batch)] for r in range(DISTINCT_REQUESTS)]

    def rerank_requests(self, documents: int) -> list[tuple[str, list[str]]]:
        n = len(self.texts)
        return [
            (self.queries[r % len(self.queries)], [self.texts[(r * documents + j) % n] for j in range(documents)])
            for r in range(DISTINCT_REQUESTS)
        ]


def _cut(words: list[str], start: int, length: int, count: Callable[[list[str]], list[int]] | None) -> int:
    """How many words from `start` make `length` tokens (at most; at least one word)."""
    if count is None:
        return length
    lo, hi = 1, length  # a word is at least one token, so `length` words is an upper bound
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count([" ".join(words[start : start + mid])])[0] <= length:
            lo = mid
        else:
            hi = mid - 1
    return lo


def token_counter(tokenizer: Path | None) -> tuple[Callable[[list[str]], list[int]], LengthUnit]:
    """Count tokens with a tokenizer.json (special tokens included, no truncation), else words: identity's counts."""
    if tokenizer is None:
        return (lambda texts: word_counts(texts).tolist()), LengthUnit.WORDS
    path = tokenizer / "tokenizer.json" if tokenizer.is_dir() else tokenizer
    if not path.is_file():
        raise UserError(f"--tokenizer {tokenizer}: no tokenizer.json there")
    model = Tokenizer(path)
    return (lambda texts: model.lengths(texts).tolist()), LengthUnit.TOKENIZER


def load_workload(texts: Path | None, dataset: Path | None, tokenizer: Path | None) -> Workload:
    if texts is not None and dataset is not None:
        raise UserError("load: give at most one of --texts FILE or --dataset PATH")
    count, source_kind = token_counter(tokenizer)
    if texts is not None:
        items = read_texts(texts)[:MAX_SOURCE_TEXTS]
        return Workload(items, items[:DISTINCT_REQUESTS], str(texts), count, source_kind)
    from bench.datasets import DEMO_DATASET, load_dataset

    path = dataset or Path(DEMO_DATASET)
    data = load_dataset(path)
    items = [doc.full_text for doc in list(data.corpus.values())[:MAX_SOURCE_TEXTS] if doc.full_text.strip()]
    if not items:
        raise UserError(f"load: {path} has no corpus texts")
    queries = list(data.queries.values())[:DISTINCT_REQUESTS] or items[:DISTINCT_REQUESTS]
    return Workload(items, queries, data.source, count, source_kind)
