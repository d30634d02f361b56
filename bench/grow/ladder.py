"""The ladder a grow run climbs: its rungs (`--rungs 1k,10k,30k`) and the corpus at each rung — the dataset's own
documents at the first, distractors added to fill each next one."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bench.core.errors import UserError
from bench.datasets.distractors import Distractors
from bench.datasets.model import Dataset, Document

UNITS = ("docs", "chunks")
_RUNG = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_rungs(text: str) -> list[int]:
    """`1k,10k,30k` -> [1000, 10000, 30000]: whole sizes (k = 1,000, M = 1,000,000), strictly increasing."""
    rungs: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        match = _RUNG.match(item)
        size = float(match.group(1)) * _SCALE[match.group(2).lower()] if match else -1.0
        if not match or size < 1 or size != int(size):
            raise UserError(f"--rungs {text!r}: {item!r} is not a whole size ≥ 1 (such as 500, 2.5k, 1M)")
        if rungs and int(size) <= rungs[-1]:
            raise UserError(f"--rungs {text!r}: rungs must increase ({item} after {rungs[-1]:,})")
        rungs.append(int(size))
    return rungs


def check_unit(unit: str) -> str:
    if unit not in UNITS:
        raise UserError(f"--unit {unit!r}: expected docs or chunks")
    return unit


@dataclass(frozen=True)
class Rung:
    index: int  # 1, 2, ...
    size: int  # in the ladder's unit


class Corpora:
    """The corpus at each rung: the dataset's own documents, then the first distractors up to the rung's size (in
    documents; with --unit chunks, up to as many documents as the app needs to hold the rung's chunks)."""

    def __init__(self, dataset: Dataset, distractors: Distractors, rungs: list[int], unit: str = "docs"):
        base = len(dataset.corpus)
        if rungs[0] < base and unit == "docs":
            raise UserError(
                f"--rungs: the first rung ({rungs[0]:,}) is below the dataset's own {base:,} documents, which go in at "
                "the first rung: start at or above it (or sample queries with --queries)"
            )
        need, capacity = max(0, rungs[-1] - base), distractors.capacity
        if capacity is not None and need > capacity:
            if unit == "chunks":  # a document is at least one chunk: fewer may do; the ladder says if they ran out
                need = capacity
            else:
                short = next(size for size in rungs if size - base > capacity)
                raise UserError(
                    f"--distractors {distractors.source.text}: holds {capacity:,} documents; rung {short:,} needs "
                    f"{short - base:,} besides the dataset's own {base:,}"
                )
        self.dataset, self.unit = dataset, unit
        self.rungs = [Rung(i, size) for i, size in enumerate(rungs, 1)]
        self._pool: list[Document] = distractors.first(need)

    @property
    def capacity(self) -> int:
        """The most documents a rung can hold: the dataset's own and every distractor made."""
        return len(self.dataset.corpus) + len(self._pool)

    def prefix(self, docs: int) -> Dataset:
        """The dataset with its own documents and the first distractors, `docs` documents in all."""
        from dataclasses import replace

        corpus = dict(self.dataset.corpus)
        corpus.update((d.doc_id, d) for d in self._pool[: docs - len(self.dataset.corpus)])
        return replace(self.dataset, corpus=corpus, notes=[*self.dataset.notes])
