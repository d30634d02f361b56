"""Write the results file as records arrive (flushed and synced), and read it back, validated."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.errors import InputError
from bench.results.schema import (
    READABLE_VERSIONS, RECORD_TYPES, SCHEMA, VERSION, ComparisonRecord, EndRecord, LoadPointRecord, MetricRecord, QueryRecord, RunHeader, TargetRecord,
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


class ResultsWriter:
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("w", encoding="utf-8")

    def write(self, *records: Any) -> None:
        for record in records:
            self._fh.write(json.dumps(_clean(dataclasses.asdict(record)), ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())  # an interruption must not lose a finished target

    def close(self) -> None:
        self._fh.close()


@dataclass
class Results:
    path: Path
    header: RunHeader
    targets: list[TargetRecord] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    metrics: list[MetricRecord] = field(default_factory=list)
    comparisons: list[ComparisonRecord] = field(default_factory=list)
    load_points: list[LoadPointRecord] = field(default_factory=list)
    end: EndRecord | None = None

    def metric(self, target: str, measure: str) -> MetricRecord | None:
        return next((m for m in self.metrics if m.target == target and m.measure == measure), None)


def _restore(value: Any) -> Any:
    return float("nan") if value is None else value


def read_results(path: str | Path) -> Results:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such results file")
    results: Results | None = None
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                if not line.endswith("\n"):
                    break  # a line cut by an interruption: everything before it stands
                raise InputError(path, f"malformed JSON ({exc.msg})", number) from None
            kind = data.get("record") if isinstance(data, dict) else None
            if kind not in RECORD_TYPES:
                raise InputError(path, f"unknown record type {kind!r}", number)
            if results is None:
                if kind != "run" or data.get("schema") != SCHEMA:
                    raise InputError(path, f"not a ragbench results file (first record must be a {SCHEMA} header)", number)
                if data.get("version") not in READABLE_VERSIONS:
                    raise InputError(path, f"results schema version {data.get('version')} (this ragbench reads "
                                     f"{', '.join(map(str, READABLE_VERSIONS))})", number)
            cls = RECORD_TYPES[kind]
            names = {f.name for f in dataclasses.fields(cls)}
            try:
                record = cls(**{k: v for k, v in data.items() if k in names})
            except TypeError as exc:
                raise InputError(path, f"{kind} record: {exc}", number) from None
            if isinstance(record, RunHeader):
                results = Results(path=path, header=record)
            elif isinstance(record, TargetRecord):
                results.targets.append(record)
            elif isinstance(record, QueryRecord):
                results.queries.append(record)
            elif isinstance(record, MetricRecord):
                record.ci_low, record.ci_high = _restore(record.ci_low), _restore(record.ci_high)
                results.metrics.append(record)
            elif isinstance(record, ComparisonRecord):
                for name in ("ci_low", "ci_high", "p_randomization", "p_ttest", "p_randomization_holm", "p_ttest_holm"):
                    setattr(record, name, _restore(getattr(record, name)))
                results.comparisons.append(record)
            elif isinstance(record, LoadPointRecord):
                results.load_points.append(record)
            elif isinstance(record, EndRecord):
                results.end = record
    if results is None:
        raise InputError(path, "empty results file")
    return results
