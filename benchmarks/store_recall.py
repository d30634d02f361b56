"""Recall@k of a vector store's approximate index itself, apart from any model's quality (issue 47): each query's
top k as the store's index answers it, against the exact top k over the same vectors. One mechanism for every store:
- `tie_recall`: a query's score from the distances of the rows the index returned and of the exact top k (a row as
  close as the exact k-th is a true one: the hash stand-in's vectors tie often);
- the exact top k either from the store itself with its index off (pgvector: a sequential scan,
  benchmarks/pgvector_recall.py) or in process over the store's own vectors (`vector_recall`: cosine in numpy, for
  the stores whose vectors a reader dumps: Chroma and Milvus Lite, benchmarks/store_recall_chroma.py);
- `RungRecall`: at every rung grow writes, the knowledge base of that rung's target measured by a store's
  `measure(target)`, CSV rows appended to OUT.recall.csv (benchmarks/grow_openwebui.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Recall:
    collection: str
    rows: int
    setting: str
    recall: float  # mean over queries: the approximate rows as close as the exact k-th, over k (ties count as found)
    short: int  # queries answered with fewer than k rows
    plan: str  # how the store answered (pgvector: the plan's first node, whether the HNSW index was used at all)


def tie_recall(got: Sequence[float], exact: Sequence[float], tie: float) -> float:
    """One query's recall: the share of the exact top k (`exact`: its distances) that the index's answer (`got`: the
    distances of the rows it returned) matches, a row within `tie` of the exact k-th distance counting as found."""
    bound = max(exact, default=0.0) + tie
    return min(1.0, sum(d <= bound for d in got) / max(1, len(exact)))


def cosine_distances(vectors: Floats, query: Floats) -> Floats:
    """1 - cosine similarity of `query` to each row of `vectors` (rows of zeros: distance 1)."""
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    similarity = (vectors @ query) / np.where(norms == 0, 1.0, norms)
    return (1.0 - similarity).astype(np.float32)


def vector_recall(
    ids: Sequence[str], vectors: Floats, queries: Floats, found: Sequence[Sequence[str]], k: int, tie: float = 1e-5
) -> tuple[float, int]:
    """Mean recall@k over `queries` of the index's answers `found` (ids, best first; "" pads a short answer) against
    the exact top k over the same `vectors`; and the queries answered with fewer than min(k, rows) ids."""
    row_of = {row_id: i for i, row_id in enumerate(ids)}
    total, short = 0.0, 0
    for query, answer in zip(queries, found, strict=True):
        distances = cosine_distances(vectors, query)
        exact = np.sort(distances)[:k]
        rows = [row_of[row_id] for row_id in answer[:k] if row_id]
        short += len(rows) < min(k, len(ids))
        total += tie_recall([float(distances[r]) for r in rows], [float(d) for d in exact], tie)
    return total / max(1, len(found)), short


class RungRecall(threading.Thread):
    """Recall@10 of each knowledge base at every rung: polls grow's results file and, for each new rung record,
    measures that target's base (`measure(target)`) and appends CSV rows to `out`."""

    def __init__(self, results: Path, measure: Callable[[str], list[Recall]], out: Path):
        super().__init__(daemon=True)
        self.results, self.measure, self.out = results, measure, out
        self.done = threading.Event()
        self.seen = 0

    def run(self) -> None:
        with self.out.open("w") as csv:
            csv.write("target,rung,size,rows,setting,recall_at_10,short\n")

            def write(line: str) -> int:  # flushed: a ladder stopped by a signal keeps every rung's recall
                count = csv.write(line)
                csv.flush()
                return count

            while not self.done.wait(5):
                self.poll(write)
            self.poll(write)

    def poll(self, write: Callable[[str], int]) -> None:
        if not self.results.exists():
            return
        lines = self.results.read_text().splitlines()
        try:
            rungs = [json.loads(line) for line in lines if '"grow_rung"' in line]
        except json.JSONDecodeError:  # a record half written: read it at the next poll
            return
        for record in rungs[self.seen :]:
            target, rung = record["target"], record["rung"]
            try:
                found = self.measure(target)
            except Exception as exc:  # a measurement beside the ladder: say it, never stop the ladder
                print(f"recall at rung {rung} of {target}: {exc}", flush=True)
                found = []
            for r in found:
                write(f'{target},{rung},{record["size"]},{r.rows},"{r.setting}",{r.recall:.3f},{r.short}\n')
                print(f"rung {rung} {target}: recall@10 {r.recall:.3f} {r.rows:,} rows, {r.setting}", flush=True)
        self.seen = len(rungs)
