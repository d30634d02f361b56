"""`--lengths` and `--documents` entries beyond one number: a distribution, drawn with the run's seed.

    --lengths 128,from:builtin:numpy-docs   texts of 128 tokens; texts as long as the dataset's own corpus texts
    --documents 10,10..100,poisson:40       10 a request; uniform 10 to 100 (inclusive); Poisson of mean 40 (>= 1)

`from:DATASET` draws each text's length from the dataset's corpus texts' lengths, counted as load counts
(`--tokenizer`'s tokens, else words), and cuts texts of those lengths from the running corpus
(bench/load/workload.py). A documents distribution draws each distinct request's count of candidates. Both are
drawn once per run from `--seed`: a rerun sends the same lengths and counts; the record says what was drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from bench.core import values as v
from bench.core.errors import UserError
from bench.results.schema import Spread

FROM = "from:"
RANGE = ".."
POISSON = "poisson:"


@dataclass(frozen=True)
class LengthsFrom:
    """`--lengths from:DATASET`: text lengths drawn from DATASET's corpus, seeded with the run's `--seed`."""

    dataset: str
    seed: int = 0

    def __str__(self) -> str:
        return f"{FROM}{self.dataset}"


class DrawKind(StrEnum):
    """How a documents distribution draws: uniform over a range, or Poisson about a mean."""

    RANGE = "range"
    POISSON = "poisson"


@dataclass(frozen=True)
class DocumentsDraw:
    """`--documents 10..100` (uniform, inclusive) or `poisson:40` (at least 1, at most 4096): candidates a request."""

    kind: DrawKind
    low: int  # range: its low end; poisson: 1
    high: int  # range: its high end; poisson: 4096, the most texts a request
    mean: float
    seed: int = 0

    def __str__(self) -> str:
        return f"{self.low}{RANGE}{self.high}" if self.kind == DrawKind.RANGE else f"{POISSON}{self.mean:g}"

    @property
    def typical(self) -> int:
        """The distribution's mean, rounded (at least 1): a point's `batch` and `documents`."""
        return max(1, round(self.mean))

    def counts(self, n: int) -> list[int]:
        """`n` counts, the same for the same seed."""
        rng = np.random.default_rng(self.seed)
        if self.kind == DrawKind.RANGE:
            drawn = rng.integers(self.low, self.high, size=n, endpoint=True)
        else:
            drawn = np.clip(rng.poisson(self.mean, size=n), self.low, self.high)
        return [int(c) for c in drawn]


def parse_lengths(text: str | None, seed: int) -> list[int | LengthsFrom | None]:
    """`--lengths 16,128,from:builtin:numpy-docs` -> [16, 128, LengthsFrom(...)]; not given -> [None]."""
    if text is None:
        return [None]
    out: list[int | LengthsFrom | None] = []
    for item in _items("--lengths", text):
        if item.startswith(FROM):
            out.append(LengthsFrom(_dataset(item), seed))
        else:
            out.append(v.number("--lengths", item, v.TOKENS_PER_TEXT))
    return out


def parse_documents(text: str | None, seed: int) -> list[int | DocumentsDraw]:
    """`--documents 10,10..100,poisson:40` -> [10, DocumentsDraw(RANGE...), DocumentsDraw(POISSON...)];
    not given -> []."""
    if text is None:
        return []
    out: list[int | DocumentsDraw] = []
    for item in _items("--documents", text):
        if RANGE in item:
            out.append(_range(item, seed))
        elif item.startswith(POISSON):
            mean = v.number(f"--documents {item}: mean", item[len(POISSON) :], v.TEXTS_PER_REQUEST)
            out.append(DocumentsDraw(DrawKind.POISSON, 1, int(v.TEXTS_PER_REQUEST.high), float(mean), seed))
        else:
            out.append(v.number("--documents", item, v.TEXTS_PER_REQUEST))
    return out


def _items(flag: str, text: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise UserError(f"{flag} {text!r}: an empty item (expected a comma list, as {_EXAMPLES[flag]})")
    return items


_EXAMPLES = {"--lengths": "16,128,from:builtin:numpy-docs", "--documents": "10,10..100,poisson:40"}


def _range(item: str, seed: int) -> DocumentsDraw:
    low_text, _, high_text = item.partition(RANGE)
    low = v.number(f"--documents {item}: low", low_text, v.TEXTS_PER_REQUEST)
    high = v.number(f"--documents {item}: high", high_text, v.TEXTS_PER_REQUEST)
    if high <= low:
        raise UserError(f"--documents {item}: expected LOW..HIGH with LOW < HIGH, as 10..100")
    return DocumentsDraw(DrawKind.RANGE, low, high, (low + high) / 2, seed)


def _dataset(item: str) -> str:
    """`from:DATASET`'s dataset, located now (a built-in by name): one line, exit 2, before anything is sent."""
    from bench.datasets import check_dataset_path

    dataset = item[len(FROM) :]
    if not dataset:
        raise UserError(f"--lengths {item}: expected from:DATASET (a dataset folder or file, or builtin:numpy-docs)")
    try:
        check_dataset_path(dataset)
    except UserError as exc:
        raise UserError(f"--lengths {item}: {exc}") from None
    return dataset


def spread(numbers: list[int] | np.ndarray) -> Spread:
    """A set of whole numbers' quantiles (observed values: numpy's inverted CDF) and mean; never empty."""
    array = np.asarray(numbers, dtype=np.int64)
    q = np.quantile(array, [0.1, 0.5, 0.9, 0.99], method="inverted_cdf")
    return Spread(
        n=int(array.size),
        mean=round(float(array.mean()), 3),
        min=int(array.min()),
        p10=int(q[0]),
        p50=int(q[1]),
        p90=int(q[2]),
        p99=int(q[3]),
        max=int(array.max()),
    )
