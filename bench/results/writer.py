"""Write the results file as records arrive (flushed and synced), each record once."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

from bench.core.interrupt import uninterruptible
from bench.core.secrets import mask_fields
from bench.results.schema import (
    ComparisonRecord,
    EndRecord,
    GrowRungRecord,
    GrowSummaryRecord,
    IdentityEmbedPairRecord,
    IdentityEndpointRecord,
    IdentityRerankPairRecord,
    IngestPointRecord,
    IngestSummaryRecord,
    MetricRecord,
    QueryRecord,
    RunHeader,
    TargetRecord,
)


def _clean(value: Any) -> Any:
    """JSON has no NaN: non-finite floats become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


# What makes a record unique: its type, then the names and numbers that identify it (see record_key).
RecordKey = tuple[object, ...]


def record_key(record: object) -> RecordKey | None:
    """What makes a record unique in one results file (None: no rule for this kind)."""
    if isinstance(record, (RunHeader, EndRecord)):
        return (record.record,)
    if isinstance(record, TargetRecord):
        return ("target", record.name)
    if isinstance(record, QueryRecord):
        return ("query", record.target, record.qid)
    if isinstance(record, MetricRecord):
        return ("metrics", record.target, record.measure)
    if isinstance(record, ComparisonRecord):
        return ("comparison", record.measure, record.a, record.b)
    if isinstance(record, (IdentityEmbedPairRecord, IdentityRerankPairRecord)):  # what compare gates per pair
        return (record.record, record.a, record.b)
    if isinstance(record, IdentityEndpointRecord):
        return (record.record, record.name)
    if isinstance(record, IngestPointRecord):
        return (record.record, record.target, record.label)
    if isinstance(record, IngestSummaryRecord):
        return (record.record, record.target)
    if isinstance(record, GrowRungRecord):
        return (record.record, record.target, record.rung)
    if isinstance(record, GrowSummaryRecord):
        return (record.record, record.target)
    return None


def _fields(value: Any) -> Any:
    """dataclasses.asdict, less the fields written only when set (schema.WRITTEN_WHEN_SET) that hold their
    default: a file that does not use them is written without them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _fields(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not (f.metadata.get("written_when_set") and getattr(value, f.name) in (None, [], {}, False))
        }
    if isinstance(value, (list, tuple)):
        return [_fields(v) for v in value]
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items()}
    return copy.deepcopy(value)


def record_line(record: Any) -> str:
    """One JSON line; secrets masked, non-finite floats as null."""
    return json.dumps(_clean(mask_fields(type(record), _fields(record))), ensure_ascii=False) + "\n"


class ResultsWriter:
    """Appends records to a results file. Each `write` is one batch, written whole or not at all with
    respect to Ctrl-C and SIGTERM (they are held until the batch is on disk), and each record is
    written once: writing a record twice is a bug, and raises, except an `end` record after the first,
    which is dropped (a signal held during the first one reaches the caller's error path after it)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("w", encoding="utf-8")
        self._written: set[RecordKey] = set()
        self._ended = False

    @classmethod
    def rewritten(cls, path: Path, records: list[Any]) -> ResultsWriter:
        """A writer that continues a results file now holding exactly `records` (replaced atomically)."""
        staging = path.with_name(path.name + ".tmp")
        writer = cls(staging)
        writer.write(*records)
        with uninterruptible():
            staging.replace(path)
            writer.path = path
        return writer

    def write(self, *records: Any) -> None:
        if self._ended:  # the first `end` record is the truth: a stop after it changes nothing measured
            records = tuple(r for r in records if not isinstance(r, EndRecord))
        keys = [record_key(r) for r in records]
        repeated = [k for i, k in enumerate(keys) if k is not None and (k in self._written or k in keys[:i])]
        if repeated:
            raise RuntimeError(f"results record written twice: {repeated[0]}")
        text = "".join(record_line(r) for r in records)
        with uninterruptible():
            self._fh.write(text)
            self._fh.flush()
            os.fsync(self._fh.fileno())  # an interruption must not lose a finished target
            self._written.update(k for k in keys if k is not None)
            self._ended = self._ended or any(isinstance(r, EndRecord) for r in records)

    def close(self) -> None:
        self._fh.close()
