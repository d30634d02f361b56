"""What identity sends: texts (a file or a dataset's corpus) and a query set.

Texts files and token lengths are read by bench.datasets.texts, shared with load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.core.errors import InputError
from bench.datasets.texts import read_texts

MAX_QUERIES = 100


@dataclass
class IdentityInput:
    texts: list[str]
    queries: list[str]
    # For --texts the queries are texts of the corpus itself: their own index is left out of the neighbours.
    query_self_index: list[int] | None
    source: str


def _spread(n: int, k: int) -> list[int]:
    return sorted({int(i) for i in np.linspace(0, n - 1, num=min(n, k))}) if n else []


def from_texts(path: Path, limit: int | None = None) -> IdentityInput:
    texts = read_texts(path)[:limit]
    # Every 4th text at most: the queries are embedded once more per endpoint on top of the corpus.
    picks = _spread(len(texts), min(MAX_QUERIES, max(1, len(texts) // 4)))
    return IdentityInput(texts, [texts[i] for i in picks], picks, str(path))


def from_dataset(path: Path, limit: int | None = None) -> IdentityInput:
    from bench.datasets import load_dataset

    dataset = load_dataset(path)
    texts = [doc.full_text for doc in dataset.corpus.values()][:limit]
    if not texts:
        raise InputError(path, "the corpus is empty")
    queries = list(dataset.queries.values())
    if not queries:  # neighbours need a query set: take one from the corpus, as for --texts
        picks = _spread(len(texts), min(MAX_QUERIES, max(1, len(texts) // 4)))
        return IdentityInput(texts, [texts[i] for i in picks], picks, str(path))
    return IdentityInput(texts, [queries[i] for i in _spread(len(queries), MAX_QUERIES)], None, str(path))
