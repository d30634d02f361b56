"""Small BEIR folders written from data a test chooses."""

from __future__ import annotations

import json
from pathlib import Path


def write_beir(root: Path, corpus: dict[str, str], queries: dict[str, str], qrels: list[tuple[str, str, int]]) -> Path:
    """corpus.jsonl, queries.jsonl and qrels/test.tsv under `root`; returns `root`."""
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in corpus.items())
    )
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    )
    return root
