"""Small BEIR folders written from data a test chooses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.datasets.model import Dataset

# A file's content: id -> text, one JSON object a line, or the file's text as it stands (for malformed input).
Records = dict[str, str] | list[dict[str, Any]] | str
# qrels: (query id, document id, grade) rows under the header, the file's text as it stands, or None for no qrels.
Qrels = list[tuple[str, str, int]] | str | None

CORPUS: list[dict[str, Any]] = [{"_id": "d1", "title": "T1", "text": "alpha"}, {"_id": "d2", "text": "beta"}]
QUERIES: list[dict[str, Any]] = [{"_id": "q1", "text": "alpha?"}, {"_id": "q2", "text": "beta?"}]
QRELS: list[tuple[str, str, int]] = [("q1", "d1", 1), ("q2", "d2", 2)]
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"

# Six documents of overlapping fruit words and four queries, one relevant document each: rankings with shared
# words for every first stage, fusion and rerank to order.
FRUIT_CORPUS = {
    "d1": "apple banana cherry",
    "d2": "apple banana",
    "d3": "apple",
    "d4": "banana cherry date",
    "d5": "cherry date elder",
    "d6": "elder fig grape",
}
FRUIT_QUERIES = {"q1": "apple banana", "q2": "cherry date", "q3": "elder fig", "q4": "apple cherry"}
FRUIT_QRELS = [("q1", "d1", 1), ("q2", "d4", 1), ("q3", "d6", 1), ("q4", "d1", 1)]


def _jsonl(records: Records, title: bool) -> str:
    if isinstance(records, str):
        return records
    if isinstance(records, dict):
        records = [
            {"_id": key, "title": "", "text": text} if title else {"_id": key, "text": text}
            for key, text in records.items()
        ]
    return "".join(json.dumps(record) + "\n" for record in records)


def write_beir(
    root: Path,
    corpus: Records = CORPUS,
    queries: Records = QUERIES,
    qrels: Qrels = QRELS,
    *,
    split: str = "test",
) -> Path:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv under `root` (no qrels folder when `qrels` is None);
    returns `root`. A dict corpus gives each document an empty title."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(_jsonl(corpus, title=True))
    (root / "queries.jsonl").write_text(_jsonl(queries, title=False))
    if qrels is not None:
        (root / "qrels").mkdir(exist_ok=True)
        rows = qrels if isinstance(qrels, str) else QRELS_HEADER + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
        (root / "qrels" / f"{split}.tsv").write_text(rows)
    return root


def write_dataset(root: Path, dataset: Dataset) -> Path:
    """`dataset` in BEIR layout under `root`, titles included."""
    corpus = [{"_id": doc.doc_id, "title": doc.title, "text": doc.text} for doc in dataset.corpus.values()]
    qrels = [(qid, doc_id, grade) for qid, docs in dataset.qrels.items() for doc_id, grade in docs.items()]
    return write_beir(root, corpus, dataset.queries, qrels)
