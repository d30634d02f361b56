"""The ladder a grow run climbs: its rungs (`--rungs 1k,10k,30k`) and the corpus at each rung — the dataset's own
documents at the first, distractors added to fill each next one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.core.progress import ProgressFactory, no_progress
from bench.datasets.distractors import Distractors
from bench.datasets.model import Dataset, Document
from bench.results.schema.grow import GrowUnit

_RUNG = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}
# The largest rung: a knowledge base of 100M documents is past what one host ingests in a benchmark's time, and
# its distractors alone would fill tens of GB; a longer number is a typo, refused before anything is made.
MAX_RUNG = 100_000_000
# A rung's corpus is held about three times: the distractors made, the rung's corpus and the target's own copy.
COPIES = 3
MAKE_BATCH = 10_000  # distractors made between two progress advances


def parse_rungs(text: str) -> list[int]:
    """`1k,10k,30k` -> [1000, 10000, 30000]: whole sizes (k = 1,000, M = 1,000,000), strictly increasing."""
    rungs: list[int] = []
    for item in (part.strip() for part in text.split(",")):
        match = _RUNG.match(item) if len(item) <= 24 else None
        size = float(match.group(1)) * _SCALE[match.group(2).lower()] if match else -1.0
        if not match or size < 1 or size > MAX_RUNG or size != int(size):
            raise UserError(
                f"--rungs {text[:80]!r}: {item[:40]!r} is not a whole size from 1 to {MAX_RUNG:,} (such as 500, 2.5k, "
                "1M)"
            )
        if rungs and int(size) <= rungs[-1]:
            raise UserError(f"--rungs {text!r}: rungs must increase ({item} after {rungs[-1]:,})")
        rungs.append(int(size))
    return rungs


def check_unit(unit: str) -> GrowUnit:
    if unit not in tuple(GrowUnit):
        raise UserError(f"--unit {unit!r}: expected docs or chunks")
    return GrowUnit(unit)


@dataclass(frozen=True)
class Rung:
    index: int  # 1, 2, ...
    size: int  # in the ladder's unit


class Corpora:
    """The corpus at each rung: the dataset's own documents, then the first distractors up to the rung's size (in
    documents; with --unit chunks, up to as many documents as the app needs to hold the rung's chunks). Distractors
    are made as a rung first needs them (a ladder's first rungs are measured before its last ones are made), and a
    ladder whose distractors could not fit this host's memory is refused before anything is made."""

    def __init__(self, dataset: Dataset, distractors: Distractors, rungs: list[int], unit: str = "docs"):
        base = len(dataset.corpus)
        if rungs[0] < base and unit == GrowUnit.DOCS:
            raise UserError(
                f"--rungs: the first rung ({rungs[0]:,}) is below the dataset's own {base:,} documents, which go in at "
                "the first rung: start at or above it (or sample queries with --queries)"
            )
        need, capacity = max(0, rungs[-1] - base), distractors.capacity
        if capacity is not None and need > capacity:
            if (
                unit == GrowUnit.CHUNKS
            ):  # a document is at least one chunk: fewer may do; the ladder says if they ran out
                need = capacity
            else:
                short = next(size for size in rungs if size - base > capacity)
                raise UserError(
                    f"--distractors {distractors.source.text}: holds {capacity:,} documents; rung {short:,} needs "
                    f"{short - base:,} besides the dataset's own {base:,}"
                )
        check_memory(need * distractors.bytes_each() * COPIES, rungs[-1])
        self.dataset, self.unit = dataset, unit
        self.rungs = [Rung(i, size) for i, size in enumerate(rungs, 1)]
        self._distractors, self._need = distractors, need
        self._pool: list[Document] = []

    @property
    def capacity(self) -> int:
        """The most documents a rung can hold: the dataset's own and every distractor the ladder may make."""
        return len(self.dataset.corpus) + self._need

    def prefix(self, docs: int, progress: ProgressFactory = no_progress) -> Dataset:
        """The dataset with its own documents and the first distractors, `docs` documents in all (those not made
        yet made now, their progress shown through `progress`)."""
        from dataclasses import replace

        self._make(min(docs - len(self.dataset.corpus), self._need), progress)
        corpus = dict(self.dataset.corpus)
        corpus.update((d.doc_id, d) for d in self._pool[: docs - len(self.dataset.corpus)])
        return replace(self.dataset, corpus=corpus, notes=[*self.dataset.notes])

    def _make(self, count: int, progress: ProgressFactory) -> None:
        if count <= len(self._pool):
            return
        advance = progress(f"making distractors {len(self._pool):,} to {count:,}", count - len(self._pool))
        while len(self._pool) < count:
            start = len(self._pool)
            self._pool += self._distractors.documents(start, min(count, start + MAKE_BATCH))
            advance(len(self._pool) - start)


def available_memory() -> int | None:
    """This host's available memory in bytes (/proc/meminfo's MemAvailable); None: not known here."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(needed: float, largest: int) -> None:
    """Refuse a ladder whose distractors would not fit in the memory this host has available."""
    available = available_memory()
    if available is not None and needed > available:
        raise UserError(
            f"--rungs: the largest rung ({largest:,}) needs ~{needed / 1e9:,.1f} GB of distractors in memory, more "
            f"than the {available / 1e9:,.1f} GB this host has available: give smaller rungs"
        )
