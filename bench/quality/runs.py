"""TREC run files (`qid Q0 docno rank score tag`) and the in-memory run: qid -> docno -> score."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.errors import InputError
from bench.datasets.io import read_lines, require_file

if TYPE_CHECKING:  # a type only: importing targets would pull httpx into `ragbench evaluate`
    from bench.targets.base import QueryResult

Run = dict[str, dict[str, float]]


def read_run(path: str | Path) -> Run:
    path = require_file(Path(path), "run file")
    run: Run = {}
    for number, text in read_lines(path):
        fields = text.split()
        if len(fields) < 6:  # trec_eval reads six fields and ignores anything after them
            raise InputError(path, f"expected 6 columns 'qid Q0 docno rank score tag', found {len(fields)}", number)
        qid, _q0, doc_id, _rank, score, _tag = fields[:6]
        try:
            value = float(score)
        except ValueError:
            raise InputError(path, f"score {score!r} is not a number", number) from None
        if not math.isfinite(value):
            raise InputError(path, f"score {score!r} is not finite", number)
        docs = run.setdefault(qid, {})
        if doc_id in docs:
            raise InputError(path, f"document {doc_id!r} retrieved twice for query {qid!r}", number)
        docs[doc_id] = value
    if not run:
        raise InputError(path, "empty run file")
    return run


def trec_order(docs: dict[str, float]) -> list[tuple[str, float]]:
    """The order trec_eval evaluates in: score descending, then docno descending (the rank column is ignored)."""
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def run_from_results(results: list[QueryResult]) -> tuple[Run, bool]:
    """A run that evaluates each target's own rank order; second value: whether scores had to be replaced.

    trec_eval re-sorts by score, breaking ties by docno, so engine scores are kept only when they
    strictly decrease down the ranking: then its order is the target's. Otherwise (ties, null scores,
    scores out of order after fusion or a fallback) scores become `depth - rank`, so trec_eval sees
    exactly the order the target returned.
    """
    run: Run = {}
    replaced = False
    for result in results:
        scores = [hit.score for hit in result.hits]
        finite = [s for s in scores if s is not None and math.isfinite(s)]
        ordered = len(finite) == len(scores) and all(a > b for a, b in itertools.pairwise(finite))
        if not ordered and result.hits:
            replaced = True
        n = len(result.hits)
        run[result.qid] = {
            hit.doc_id: (float(hit.score) if ordered else float(n - rank))  # type: ignore[arg-type]
            for rank, hit in enumerate(result.hits)
        }
    return run, replaced


def write_run(path: Path, run: Run, tag: str) -> None:
    """Write in trec order so that rank and score agree for every reader."""
    tag = "".join(c if c.isalnum() or c in "-_.:+" else "_" for c in tag) or "ragbench"
    with path.open("w", encoding="utf-8") as fh:
        for qid, docs in run.items():
            for rank, (doc_id, score) in enumerate(trec_order(docs), start=1):
                fh.write(f"{qid} Q0 {doc_id} {rank} {score!r} {tag}\n")
