"""Texts a command sends and their lengths: a texts file read, and tokens counted with a tokenizer.json or as words.

Token lengths come from a tokenizer.json (a reference model's, or `--tokenizer`), counted with special tokens
and without truncation, because truncation at 256 or 512 tokens is what identity's length buckets must expose.
Without a tokenizer, lengths are words (`word_counts`) and say so (`LengthUnit`). Identity and load read both here.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import numpy as np

from bench.core.errors import InputError, UserError
from bench.datasets.io import read_lines, require_file


class LengthUnit(StrEnum):
    """What a text's length is counted in: a tokenizer's tokens, or white-space separated words."""

    TOKENIZER = "tokenizer"
    WORDS = "words"


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
    labelled `words` wherever it is shown. Words, not a guess at tokens: a fixed ratio of word pieces per word
    is wrong for other languages, code and other tokenizers, while a word count is a defined figure anyone can
    check; `--tokenizer` gives the model's own tokens."""
    return np.asarray([len(t.split()) for t in texts], dtype=np.int32)
