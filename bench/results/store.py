"""Write the results file as records arrive (flushed and synced), and read it back, validated."""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import json
import math
import os
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench
from bench.core.errors import InputError, UserError
from bench.core.interrupt import uninterruptible
from bench.core.secrets import mask_fields
from bench.results.schema import (
    READABLE_VERSIONS,
    RECORD_TYPES,
    SCHEMA,
    CeilingPoint,
    ComparisonRecord,
    EndRecord,
    GpuTelemetryRecord,
    IdentityEmbedPairRecord,
    IdentityEndpointRecord,
    IdentityRerankPairRecord,
    LoadPointRecord,
    MetricRecord,
    QueryRecord,
    RunHeader,
    SizingRecord,
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
    return None


def _fields(value: Any) -> Any:
    """dataclasses.asdict, less the fields written only when set (schema.WRITTEN_WHEN_SET) that hold their
    default: a file that does not use them is written as before they existed."""
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


def now_iso(timespec: str = "seconds") -> str:
    """Now, in UTC, ISO 8601: the one clock every record and output is stamped with."""
    return datetime.now(UTC).isoformat(timespec=timespec)


def end_status(exc: BaseException) -> tuple[str, str]:
    """The `end` record's status and error for a run stopped by `exc`."""
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (bench.core.interrupt.Interrupted)
        return "interrupted", f"interrupted ({exc.args[0] if exc.args else 'SIGINT'})"
    if isinstance(exc, SystemExit):
        return "interrupted", "interrupted (exit)"
    if isinstance(exc, UserError):
        return "failed", str(exc)
    return "failed", f"internal error: {type(exc).__name__}: {exc}"


def plain_header(command: str) -> RunHeader:
    """The header of a command whose results name no dataset, measures or targets (identity, doctor)."""
    return RunHeader(command=command, created=now_iso(), ragbench_version=bench.__version__)


def complete_results(path: Path, command: str, records: list[Any]) -> Results:
    """The results of a command that has every record at once (identity, doctor): header, records, end."""
    results = Results(path=path, header=plain_header(command))
    for record in [*records, EndRecord(status="complete", finished=now_iso())]:
        results.add(record)
    return results


def write_results(results: Results) -> Path:
    """Write `results` whole to its path (a results file read back gives the same records)."""
    writer = ResultsWriter(results.path)
    try:
        writer.write(
            results.header,
            *[r for kind in results.records.values() for r in kind],
            *([results.end] if results.end else []),
        )
    finally:
        writer.close()
    return results.path


@dataclass
class Results:
    """A results file read back: the header, every record by type in file order, the end record if any."""

    path: Path
    header: RunHeader
    records: dict[str, list[Any]] = field(default_factory=dict)  # record type -> records
    end: EndRecord | None = None
    recomputed: list[str] = field(default_factory=list)  # targets whose metrics the report rebuilt from run files
    repeated: int = (
        0  # records found a second time, identical (earlier versions did so on Ctrl-C); the first one counts
    )
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
        failures = [f"ended part-way after {t.queries} queries: {t.error}"] if t.status == "failed" else []
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
    def ceiling(self) -> list[CeilingPoint]:
        return self.of("ceiling_point")

    @property
    def gpu_telemetry(self) -> list[GpuTelemetryRecord]:
        return self.of("gpu_telemetry")

    @property
    def sizing(self) -> list[SizingRecord]:
        return self.of("sizing")

    def metric(self, target: str, measure: str) -> MetricRecord | None:
        return next((m for m in self.metrics if m.target == target and m.measure == measure), None)


def _is_enum(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, enum.Enum)


@functools.cache
def _checker(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value fits a record field's annotation (null stands for NaN in a float field; a nested
    block is a JSON object whose fields fit theirs); built once per annotation, since a results file has hundreds
    of thousands of values."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    if origin in (typing.Union, types.UnionType):
        parts = [_checker(a) for a in args]
        return lambda value: any(part(value) for part in parts)
    if hint is type(None):
        return lambda value: value is None
    if hint is float:  # JSON numbers arrive as int or float (bool is its own type)
        return lambda value: value is None or type(value) is float or type(value) is int
    if _is_enum(hint):
        allowed = frozenset(member.value for member in hint)
        return lambda value: type(value) is str and value in allowed
    if hint in (bool, int, str):
        return lambda value: type(value) is hint
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: type(value) is dict and _wrong_field(hint, value) is None
    if origin in (dict, list):
        item = _checker(args[-1])

        def every(value: Any) -> bool:
            return all(map(item, value.values() if origin is dict else value))

        return lambda value: type(value) is origin and (args[-1] is Any or every(value))
    return lambda value: True


@functools.cache
def _field_checkers(cls: type) -> dict[str, tuple[Any, Callable[[Any], bool]]]:
    return {name: (hint, _checker(hint)) for name, hint in typing.get_type_hints(cls).items()}


def _wrong_field(cls: type, data: dict[str, Any]) -> tuple[str, Any] | None:
    """The first field of `data` that does not fit `cls` (a nested one named by its path, `requests.sent`) and
    its annotation; None when every field fits."""
    fields = _field_checkers(cls)
    for name, value in data.items():
        if name not in fields:
            continue  # a field this ragbench does not know (a newer writer's): ignored
        hint, conforms = fields[name]
        if conforms(value):
            continue
        nested = [a for a in (hint, *typing.get_args(hint)) if dataclasses.is_dataclass(a)]
        if nested and type(value) is dict:
            inner = _wrong_field(typing.cast(type, nested[0]), value)
            if inner is not None:
                return f"{name}.{inner[0]}", inner[1]
        return name, hint
    return None


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How a checked JSON value becomes the field's value (None: as it is): null is NaN in a float field, a string
    the member of an enum, an object the nested block's dataclass."""
    if hint is float:
        return lambda value: float("nan") if value is None else value
    if _is_enum(hint):
        return lambda value: hint(value)
    if dataclasses.is_dataclass(hint):
        return lambda value: _build(typing.cast(type, hint), value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: null stays null
        inner = [c for c in map(_nested_converter, args) if c is not None]
        return (lambda value: None if value is None else inner[0](value)) if len(inner) == 1 else None
    if origin is list and (item := _nested_converter(args[0])) is not None:
        return lambda value: [item(v) for v in value]
    if origin is dict and (entry := _nested_converter(args[1])) is not None:
        return lambda value: {k: entry(v) for k, v in value.items()}
    return None


def _nested_converter(hint: Any) -> Callable[[Any], Any] | None:
    """Inside a list, a dict or beside None, only blocks and enums are converted: there null is no value, not NaN."""
    return _converter(hint) if hint is not float else None


@functools.cache
def _converters(cls: type) -> dict[str, Callable[[Any], Any]]:
    found = {name: _converter(hint) for name, hint in typing.get_type_hints(cls).items()}
    return {name: convert for name, convert in found.items() if convert is not None}


def _build(cls: type, data: dict[str, Any]) -> Any:
    """An instance of `cls` from checked JSON, nested blocks included; unknown fields are dropped."""
    converters = _converters(cls)
    known = _field_checkers(cls)
    values = {k: converters[k](v) if k in converters else v for k, v in data.items() if k in known}
    return cls(**values)


def _record(cls: type, data: dict[str, Any], path: Path, number: int) -> object:
    """The record of a line, every field checked against the schema's types: a hand-edited or foreign file
    gets one line that names the field, never a traceback later."""
    wrong = _wrong_field(cls, data)
    if wrong is not None:
        name, hint = wrong
        raise InputError(
            path,
            f"{data['record']} record: field {name!r} has the wrong type "
            f"(expected {getattr(hint, '__name__', None) or hint})",
            number,
        )
    try:
        return _build(cls, data)
    except TypeError as exc:
        raise InputError(path, f"{data['record']} record: {exc}", number) from None


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
    kind = data.get("record") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in RECORD_TYPES:
        raise InputError(path, f"unknown record type {kind!r}", number)
    return typing.cast(dict[str, Any], data)


def _check_header(path: Path, data: dict[str, Any], number: int) -> None:
    if data["record"] != "run" or data.get("schema") != SCHEMA:
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
        return _record(cls, data, path, number)
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
