"""Finished queries of a target that has not finished yet: `runs/<target>.partial.jsonl`.

A target's queries are searched in batches; each finished batch is appended here (flushed, synced,
uninterruptibly), so an interruption or a server that dies loses at most the batch in flight, and
`quality --resume` searches only the queries that are not here. The file is removed in the same
uninterruptible step that writes the finished target's run file and records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from bench.core.interrupt import uninterruptible
from bench.core.secrets import mask
from bench.targets.base import Hit, QueryResult


class Checkpoint:
    def __init__(self, path: Path):
        self.path = path

    def load(self) -> dict[str, QueryResult]:
        """qid -> result kept by an earlier, interrupted run (a line cut by a crash is ignored)."""
        if not self.path.is_file():
            return {}
        kept: dict[str, QueryResult] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                data = json.loads(line)
                data["hits"] = [Hit(doc_id, score) for doc_id, score in data["hits"]]
                result = QueryResult(**data)
            except (ValueError, TypeError, KeyError):
                continue
            kept[result.qid] = result
        return kept

    def add(self, results: list[QueryResult]) -> None:
        lines = [
            json.dumps(
                {
                    "qid": r.qid,
                    "hits": [(h.doc_id, h.score) for h in r.hits],
                    "latency_s": r.latency_s,
                    "error": mask(r.error) if r.error else r.error,
                    "cost": r.cost,
                    "warnings": r.warnings,
                    "passages": r.passages,
                    "parts_ms": r.parts_ms,
                },
                ensure_ascii=False,
            )
            + "\n"
            for r in results
        ]
        with uninterruptible(), self.path.open("a", encoding="utf-8") as fh:
            fh.writelines(lines)
            fh.flush()
            os.fsync(fh.fileno())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
