"""What load sends: texts (from --texts or a dataset's corpus), queries for rerank, optional fixed token lengths.

Without --texts or --dataset the demo's data set is used (numpy's docstrings, built at run time).
`--lengths N` cuts texts of exactly N tokens (with a tokenizer) or N words (without one) from the running corpus,
so a sweep can show how latency grows with input length; `--lengths from:DATASET` cuts them to lengths drawn from
that dataset's own corpus texts (bench/load/lengths.py). Token counts for tokens/s come from the server when it says
(TEI's `x-compute-tokens`), else from the tokenizer here, else from words: the record says which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.core.errors import UserError
from bench.core.values import TOKENS_PER_TEXT
from bench.datasets.texts import LengthUnit, Tokenizer, read_texts, word_counts
from bench.load.lengths import FROM, DocumentsDraw, LengthsFrom, spread
from bench.results.schema import DocumentsDistribution, LengthDistribution

DISTINCT_REQUESTS = 64  # a ring of different bodies per point, replayed: no server cache sees one text twice in a row
MAX_SOURCE_TEXTS = 4096
CORPUS_SAMPLE = 20_000  # `--lengths from:DATASET`: the corpus texts whose lengths are counted, at most
DRAWN_TEXTS = DISTINCT_REQUESTS * 16  # `--lengths from:DATASET`: texts cut to drawn lengths (as many as 1,024 draws)


@dataclass
class Workload:
    texts: list[str]
    queries: list[str]
    source: str
    count_tokens: Callable[[list[str]], list[int]]
    tokens_source: LengthUnit
    # `--lengths from:DATASET`: the distribution this workload's texts were cut to; None: not such a cut
    distribution: LengthDistribution | None = None
    # Cuts by length, made once: cutting re-counts tokens hundreds of times (2.5-4 s on a busy 2-core machine),
    # and a sweep or a sizing run asks for the same length at every point.
    cuts: dict[int | LengthsFrom, Workload] = field(default_factory=dict, repr=False, compare=False)

    def with_length(self, length: int | LengthsFrom | None) -> Workload:
        """Texts of exactly `length` tokens (words without a tokenizer), or of lengths drawn from a dataset's
        (`--lengths from:DATASET`), cut from the running corpus."""
        if length is None:
            return self
        if length not in self.cuts:
            self.cuts[length] = self._cut_to(length) if isinstance(length, int) else self._drawn(length)
        return self.cuts[length]

    @property
    def _unit(self) -> str:
        return "token" if self.tokens_source == LengthUnit.TOKENIZER else "word"

    def _cut_to(self, length: int) -> Workload:
        texts = self._cuts([length] * (DISTINCT_REQUESTS * 4))
        return Workload(
            texts, self.queries, f"{self.source}, {length}-{self._unit} cuts", self.count_tokens, self.tokens_source
        )

    def _drawn(self, spec: LengthsFrom) -> Workload:
        """DRAWN_TEXTS texts, each as long as a corpus text of `spec`'s dataset drawn at random (seeded), counted
        as this workload counts; a draw past the running corpus's words (or 32,768) is cut at that length."""
        corpus = corpus_lengths(spec.dataset, self.count_tokens, spec.seed)
        drawn = np.random.default_rng(spec.seed).choice(corpus, size=DRAWN_TEXTS)
        longest = min(int(TOKENS_PER_TEXT.high), len(self._words()) - 1)
        lengths = [min(int(n), longest) for n in drawn]
        if self.tokens_source == LengthUnit.TOKENIZER:
            texts, sent = self._token_cuts(lengths)
        else:
            texts = self._cuts(lengths)
            sent = self.count_tokens(texts)
        distribution = LengthDistribution(
            source=str(spec),
            unit=str(self.tokens_source),
            seed=spec.seed,
            corpus=spread(corpus),
            sent=spread(sent),
            clipped=int(np.count_nonzero(drawn > longest)),
        )
        source = f"{self.source}, cuts of {spec}'s {self._unit} lengths"
        return Workload(texts, self.queries, source, self.count_tokens, self.tokens_source, distribution)

    def _words(self) -> list[str]:
        return " ".join(self.texts).split()

    def _cuts(self, lengths: list[int]) -> list[str]:
        """One text of each length (tokens with a tokenizer, else words), cut in turn from the running corpus."""
        words = self._words()
        count = self.count_tokens if self.tokens_source == LengthUnit.TOKENIZER else None
        texts: list[str] = []
        position = 0
        for length in lengths:
            if position + length >= len(words):
                position = 0
            cut = _cut(words, position, length, count)
            texts.append(" ".join(words[position : position + cut]))
            position += cut
        return texts

    def ring(self, size: int) -> int:
        """How many distinct requests of `size` texts a point cycles through: DISTINCT_REQUESTS, or as many as
        send every text cut to a drawn length once (`--lengths from:DATASET`: the whole draw, not its first 64)."""
        if self.distribution is None:
            return DISTINCT_REQUESTS
        return max(DISTINCT_REQUESTS, -(-len(self.texts) // size))

    def _token_cuts(self, lengths: list[int]) -> tuple[list[str], list[int]]:
        """`_cuts` by a tokenizer, and each text's tokens, in a few batched counts instead of a search per text: a
        tokenizer splits at white space, so a text's tokens are its words' plus the special ones; each cut is then
        counted whole, and one that is over (a tokenizer that merges across a space) loses words until it is not."""
        words = self._words()
        special = self.count_tokens([""])[0]
        unique = sorted(set(words))
        tokens = dict(zip(unique, (n - special for n in self.count_tokens(unique)), strict=True))
        sums = np.cumsum([0, *(tokens[w] for w in words)])
        spans: list[tuple[int, int]] = []
        position = 0
        for length in lengths:
            if position + length >= len(words):
                position = 0
            fits = int(np.searchsorted(sums, sums[position] + length - special, side="right")) - 1 - position
            spans.append((position, max(1, fits)))
            position += spans[-1][1]
        texts = [" ".join(words[p : p + k]) for p, k in spans]
        counts = self.count_tokens(texts)
        for i, length in enumerate(lengths):
            p, k = spans[i]
            while counts[i] > length and k > 1:
                k -= 1
                texts[i] = " ".join(words[p : p + k])
                counts[i] = self.count_tokens([texts[i]])[0]
        return texts, counts

    def embed_batches(self, batch: int) -> list[list[str]]:
        n = len(self.texts)
        return [[self.texts[(r * batch + j) % n] for j in range(batch)] for r in range(self.ring(batch))]

    def rerank_requests(self, documents: int, draw: DocumentsDraw | None = None) -> list[tuple[str, list[str]]]:
        """`ring(documents)` queries, each with `documents` candidates or as many as `draw` draws for it, taken in
        turn from the running corpus."""
        n = len(self.texts)
        ring = self.ring(documents)
        counts = draw.counts(ring) if draw is not None else [documents] * ring
        starts = np.cumsum([0, *counts[:-1]])
        return [
            (self.queries[r % len(self.queries)], [self.texts[(int(starts[r]) + j) % n] for j in range(count)])
            for r, count in enumerate(counts)
        ]


def documents_distribution(draw: DocumentsDraw | None, ring: int) -> DocumentsDistribution | None:
    """What a point's documents draw sent over its `ring` distinct requests (Workload.rerank_requests)."""
    if draw is None:
        return None
    return DocumentsDistribution(spec=str(draw), seed=draw.seed, sent=spread(draw.counts(ring)))


def corpus_lengths(dataset: str, count: Callable[[list[str]], list[int]], seed: int) -> np.ndarray:
    """The lengths (by `count`) of `dataset`'s non-blank corpus texts (of a seeded sample of CORPUS_SAMPLE of them
    in a larger corpus: the record's `corpus.n` says how many); a dataset without one: one line, exit 2."""
    from bench.datasets import load_dataset

    try:
        data = load_dataset(dataset)
    except UserError as exc:
        raise UserError(f"--lengths {FROM}{dataset}: {exc}") from None
    texts = [doc.full_text for doc in data.corpus.values() if doc.full_text.strip()]
    if not texts:
        raise UserError(f"--lengths {FROM}{dataset}: its corpus has no text to draw lengths from")
    if len(texts) > CORPUS_SAMPLE:
        picked = np.random.default_rng(seed).choice(len(texts), size=CORPUS_SAMPLE, replace=False)
        texts = [texts[i] for i in sorted(picked)]
    return np.asarray(count(texts), dtype=np.int64)


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
