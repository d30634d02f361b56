"""Read the results file back, validated: `Results`, every record typed and in file order."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core.errors import InputError
from bench.core.secrets import mask_fields
from bench.results.schema import (
    READABLE_VERSIONS,
    RECORD_TYPES,
    SCHEMA,
    CeilingPoint,
    ComparisonRecord,
    EndRecord,
    GpuTelemetryRecord,
    GrowRungRecord,
    GrowSummaryRecord,
    IngestPointRecord,
    IngestSummaryRecord,
    InterleavedRecord,
    LoadPointRecord,
    MetricRecord,
    QueryRecord,
    RunHeader,
    SizingRecord,
    TargetRecord,
    TargetStatus,
)
from bench.results.typed import typed_record
from bench.results.writer import RecordKey, record_key


@dataclass
class Results:
    """A results file read back: the header, every record by type in file order, the end record if any."""

    path: Path
    header: RunHeader
    records: dict[str, list[Any]] = field(default_factory=dict)  # record type -> records
    end: EndRecord | None = None
    recomputed: list[str] = field(default_factory=list)  # targets whose metrics the report rebuilt from run files
    repeated: int = 0  # records read a second time, identical: the first one counts
    lines: dict[int, int] = field(default_factory=dict, repr=False)  # id(record) -> its line in the file

    def add(self, record: Any, line: int | None = None) -> None:
        if isinstance(record, EndRecord):
            self.end = record
        else:
            self.of(record.record).append(record)
        if line is not None:
            self.lines[id(record)] = line

    def line(self, record: Any) -> int | None:
        """The line of the file `record` was read from (None: not read from a file)."""
        return self.lines.get(id(record))

    def of(self, kind: str) -> list[Any]:
        """The records of one type (a list that may be extended in place)."""
        return self.records.setdefault(kind, [])

    @property
    def targets(self) -> list[TargetRecord]:
        return self.of("target")

    @property
    def queries(self) -> list[QueryRecord]:
        return self.of("query")

    def target_failures(self, t: TargetRecord) -> list[str]:
        """What a quality target failed to measure, each scored as zero: the queries after it ended part-way
        (its server went away), failed queries, failed generated answers. Empty: everything was measured."""
        failures = [f"ended part-way after {t.queries} queries: {t.error}"] if t.status == TargetStatus.FAILED else []
        if t.errors:
            failures.append(f"{t.errors} of {t.queries} queries failed")
        if t.answer_errors:
            asked = sum(1 for q in self.queries if q.target == t.name and (q.answer is not None or q.answer_error))
            failures.append(f"{t.answer_errors} of {asked} generated answers failed")
        return failures

    @property
    def metrics(self) -> list[MetricRecord]:
        return self.of("metrics")

    @property
    def comparisons(self) -> list[ComparisonRecord]:
        return self.of("comparison")

    @property
    def load_points(self) -> list[LoadPointRecord]:
        return self.of("load_point")

    @property
    def interleaved(self) -> list[InterleavedRecord]:
        return self.of("interleaved")

    @property
    def ceiling(self) -> list[CeilingPoint]:
        return self.of("ceiling_point")

    @property
    def ingest_points(self) -> list[IngestPointRecord]:
        return self.of("ingest_point")

    @property
    def ingest_summaries(self) -> list[IngestSummaryRecord]:
        return self.of("ingest_summary")

    @property
    def grow_rungs(self) -> list[GrowRungRecord]:
        return self.of("grow_rung")

    @property
    def grow_summaries(self) -> list[GrowSummaryRecord]:
        return self.of("grow")

    @property
    def gpu_telemetry(self) -> list[GpuTelemetryRecord]:
        return self.of("gpu_telemetry")

    @property
    def sizing(self) -> list[SizingRecord]:
        return self.of("sizing")

    def metric(self, target: str, measure: str) -> MetricRecord | None:
        return next((m for m in self.metrics if m.target == target and m.measure == measure), None)


def read_results(path: str | Path) -> Results:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such results file")
    try:
        return _read_results(path)
    except UnicodeDecodeError:
        raise InputError(path, "not a ragbench results file (not UTF-8 text)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None


class _CutLine(Exception):
    """The last line, cut by an interruption: everything before it stands."""


def _json(path: Path, line: str, number: int) -> dict[str, Any]:
    """One line's record as JSON, its type known; a malformed line is one error naming it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        if not line.endswith("\n"):
            raise _CutLine from None
        raise InputError(path, f"malformed JSON ({exc.msg})", number) from None
    except ValueError as exc:  # an integer too long to convert
        raise InputError(path, f"malformed JSON ({exc})", number) from None
    except RecursionError:
        raise InputError(path, "malformed JSON (nested too deeply)", number) from None
    if isinstance(data, dict) and data.get("format") == "ragbench-trace":  # a meter --record trace, not results
        trace = "a traffic trace (meter --record), not a results file: replay it with load --trace"
        raise InputError(path, trace, number)
    if not isinstance(data, dict) or data.get("record") is None:
        raise InputError(path, "not a ragbench results record (no 'record' field)", number)
    kind = data["record"]
    if not isinstance(kind, str) or kind not in RECORD_TYPES:
        raise InputError(path, f"unknown record type {kind!r}", number)
    return data


def _check_header(path: Path, data: dict[str, Any], number: int) -> None:
    if RECORD_TYPES[data["record"]] is not RunHeader or data.get("schema") != SCHEMA:
        raise InputError(path, f"not a ragbench results file (first record must be a {SCHEMA} header)", number)
    if data.get("version") not in READABLE_VERSIONS:
        raise InputError(
            path,
            f"results schema version {data.get('version')} (this ragbench reads "
            f"{', '.join(map(str, READABLE_VERSIONS))})",
            number,
        )


def _typed(path: Path, data: dict[str, Any], number: int) -> object:
    try:
        cls = RECORD_TYPES[data["record"]]
        data = mask_fields(cls, data)  # a file written by hand or by an older ragbench may hold secrets
        return typed_record(cls, data, path, number)
    except RecursionError:  # nesting json.loads could read, too deep to mask: no record of ragbench's
        raise InputError(path, "malformed JSON (nested too deeply)", number) from None


def _repeated(path: Path, seen: dict[RecordKey, tuple[int, int]], record: object, line: str, number: int) -> bool:
    """Whether `record` was read before (the first one counts); a different record under the same key is an
    error: which of the two counts cannot be told, and appending one must not hide the other."""
    key = record_key(record)
    if key is None:
        return False
    if key not in seen:
        seen[key] = (number, hash(line.strip()))
        return False
    first, digest = seen[key]
    if digest != hash(line.strip()) and not isinstance(record, (RunHeader, EndRecord)):
        raise InputError(
            path,
            f"{key[0]} record {' '.join(map(str, key[1:]))!r} again, different from line "
            f"{first}: a results file holds each once",
            number,
        )
    return True


def _read_results(path: Path) -> Results:
    results: Results | None = None
    seen: dict[RecordKey, tuple[int, int]] = {}  # record key -> (line, hash of that line)
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = _json(path, line, number)
            except _CutLine:
                break
            if results is None:
                _check_header(path, data, number)
            record = _typed(path, data, number)
            if _repeated(path, seen, record, line, number) and results is not None:
                results.repeated += 1  # the same record again (or a second header or end): the first one counts
                continue
            if results is None:
                assert isinstance(record, RunHeader)  # the first record's kind was checked above
                results = Results(path=path, header=record)
            else:
                results.add(record, number)
    if results is None:
        raise InputError(path, "empty results file")
    return results
