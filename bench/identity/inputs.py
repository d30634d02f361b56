"""What identity sends: texts (a file or a dataset's corpus), a query set, and token lengths.

Token lengths come from a tokenizer.json (the reference model's, or `--tokenizer`), counted with
special tokens and without truncation, because truncation at 256 or 512 tokens is what the
length buckets must expose. Without a tokenizer, lengths are words (`word_counts`) and say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.core.errors import InputError, UserError
from bench.datasets.io import read_lines, require_file

MAX_QUERIES = 100


@dataclass
class IdentityInput:
    texts: list[str]
    queries: list[str]
    # For --texts the queries are texts of the corpus itself: their own index is left out of the neighbours.
    query_self_index: list[int] | None
    source: str


def read_texts(path: Path) -> list[str]:
    """`.jsonl`: one JSON string or {"text": ...} per line (texts may hold newlines); otherwise one text per line.
    Blank lines are skipped."""
    require_file(path, "texts file")
    texts: list[str] = []
    for number, line in read_lines(path):
        if path.name.endswith((".jsonl", ".jsonl.gz")):
            try:
                item = json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise InputError(path, f"not JSON: {exc}", number) from None
            text = item.get("text") if isinstance(item, dict) else item
            if not isinstance(text, str):
                raise InputError(path, 'expected a JSON string or an object with a "text" string', number)
            texts.append(text)
        else:
            texts.append(line)
    if not texts:
        raise InputError(path, "no texts")
    return texts


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


class Tokenizer:
    """A tokenizer.json loaded with `tokenizers` (no torch import), truncation switched off."""

    def __init__(self, model_dir: Path):
        from tokenizers import Tokenizer as HFTokenizer

        file = model_dir if model_dir.is_file() else model_dir / "tokenizer.json"  # a model folder, or its file
        if not file.is_file():
            raise UserError(f"tokenizer: {file} not found (give --tokenizer a model directory with tokenizer.json)")
        self.path = model_dir
        self._tok = HFTokenizer.from_file(str(file))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.special = self._tok.num_special_tokens_to_add(False)

    def lengths(self, texts: list[str], chunk: int = 4096) -> np.ndarray:
        counts = np.zeros(len(texts), dtype=np.int32)
        for start in range(0, len(texts), chunk):
            encoded = self._tok.encode_batch(texts[start : start + chunk])
            counts[start : start + len(encoded)] = [len(e.ids) for e in encoded]
        return counts

    def truncate(self, text: str, tokens: int) -> str:
        """The prefix of `text` that a server truncating at `tokens` (special tokens included) would read."""
        keep = tokens - self.special
        encoding = self._tok.encode(text, add_special_tokens=False)
        if keep <= 0 or len(encoding.ids) <= keep:
            return text
        return text[: encoding.offsets[keep - 1][1]]


def word_counts(texts: list[str]) -> np.ndarray:
    """A text's length without a tokenizer, in identity and load alike: its white-space separated words,
    labelled `words` wherever it is shown. Words, not a guess at tokens: the 1.3 word pieces per English word
    (+2 special tokens) once used here is wrong for other languages, code and other tokenizers, while a word
    count is a defined figure anyone can check; `--tokenizer` gives the model's own tokens."""
    return np.asarray([len(t.split()) for t in texts], dtype=np.int32)
