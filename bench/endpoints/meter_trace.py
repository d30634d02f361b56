"""A traffic trace: one line per call the meter forwarded, safe to attach to a ticket (never a text; a keyed hash
that only says which calls of this trace carried the same body).

    ragbench meter --record trace.jsonl --upstream embedding=http://tei:8080 --upstream rerank=http://tei-rr:8080

The file (JSONL) opens with a header line `{"format": "ragbench-trace", "version": 1, "hash": "hmac-sha256"}`, then
one call a line:

    {"at": 0.0123, "route": "embedding", "kind": "embed", "texts": 3, "unit": "chars", "lengths": [120, 33, 40],
     "tokens": 52, "query": null, "status": 200, "latency": 0.0141, "hash": "3f2a..."}

`at`: seconds from the recording's start (monotonic clock), sorted; `texts` the texts of the call (a rerank: its
passages, `query` the query's length); `lengths` each text's length in `unit` (`chars` as the meter records them:
the usage an endpoint reports is one total a call, kept in `tokens`; an imported trace may say `tokens`); `latency`
the meter's time for the call (s); `hash` an HMAC-SHA256 of the request body under a random key drawn for this
trace and never written (`TraceWriter.digest`): equal bodies within one trace hash alike (repeats are counted), but
no body can be confirmed by hashing a guess, and two traces' hashes never match (a plain SHA-1 of the body, as
version 1 traces written before kept, would confirm a guessed text). docs/trace.schema.json is
the schema (`python -m bench.endpoints.meter_trace docs/trace.schema.json` writes it). A CSV with the same columns
(`lengths` joined by `;`, an empty cell for null) imports the same way, for traces built from a gateway's logs.
"""

from __future__ import annotations

import csv
import hashlib
import heapq
import hmac
import itertools
import json
import math
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, TypedDict, TypeVar

from bench.core.errors import InputError
from bench.core.http import loads

TRACE_FORMAT = "ragbench-trace"
TRACE_VERSION = 1
HASH_SCHEME = "hmac-sha256"  # the header's `hash`: each call's hash is keyed by a per-trace key nobody keeps
HASH_CHARS = 32  # 128 bits of the HMAC: collisions among a trace's bodies stay out of reach
# A text past this is no text an embedder or reranker takes (the longest context windows are 32k tokens; 8 chars
# a token is far above any tokenizer's average): a length beyond it is a broken trace, refused.
MAX_TOKENS = 32_768
MAX_CHARS = 8 * MAX_TOKENS
COLUMNS = ("at", "route", "kind", "texts", "unit", "lengths", "tokens", "query", "status", "latency", "hash")


class CallKind(StrEnum):
    EMBED = "embed"
    RERANK = "rerank"
    LLM = "llm"


class TraceUnit(StrEnum):
    """What a trace's text lengths count."""

    CHARS = "chars"
    TOKENS = "tokens"


MAX_LENGTH = {TraceUnit.CHARS: MAX_CHARS, TraceUnit.TOKENS: MAX_TOKENS}


class TraceRow(TypedDict):
    """A call's line in a trace file (its wire shape; `trace_schema` describes each field)."""

    at: float
    route: str
    kind: str
    texts: int
    unit: str
    lengths: list[int]
    tokens: int | None
    query: int | None
    status: int | None
    latency: float
    hash: str | None


@dataclass(frozen=True)
class TraceCall:
    """One recorded call (the module's docstring says each field)."""

    at: float
    route: str
    kind: CallKind
    lengths: tuple[int, ...]
    unit: TraceUnit = TraceUnit.CHARS
    tokens: int | None = None
    query: int | None = None
    status: int | None = 200
    latency: float = 0.0
    hash: str | None = None

    @property
    def texts(self) -> int:
        return len(self.lengths)

    def to_json(self) -> TraceRow:
        return TraceRow(
            at=round(self.at, 6),
            route=self.route,
            kind=str(self.kind),
            texts=self.texts,
            unit=str(self.unit),
            lengths=list(self.lengths),
            tokens=self.tokens,
            query=self.query,
            status=self.status,
            latency=round(self.latency, 6),
            hash=self.hash,
        )


def call_shape(body: bytes, measure: Callable[[str], int] = len) -> tuple[CallKind, tuple[int, ...], int | None] | None:
    """A request body's kind, text lengths (`measure`: characters, or a tokenizer's tokens) and a rerank's query
    length; None for a body that is not a JSON object (the call is still recorded, with no texts)."""
    try:
        data = loads(body) if body else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("messages"), list):
        return (
            CallKind.LLM,
            tuple(measure(str(m.get("content", ""))) for m in data["messages"] if isinstance(m, dict)),
            None,
        )
    if isinstance(data.get("prompt"), str):
        return CallKind.LLM, (measure(data["prompt"]),), None
    for name in ("input", "inputs", "documents", "texts"):
        value = data.get(name)
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            lengths = tuple(_text_length(v, measure) for v in value)
            query = data.get("query")
            if isinstance(query, str):
                return CallKind.RERANK, lengths, measure(query)
            return CallKind.EMBED, lengths, None
    return None


def _text_length(value: object, measure: Callable[[str], int] = len) -> int:
    if isinstance(value, dict):  # Cohere's {"text": ...} documents
        value = value.get("text", "")
    if isinstance(value, list):  # token ids, sent as they are: their count
        return len(value)
    return measure(value if isinstance(value, str) else str(value))


class TraceWriter:
    """Writes calls as they end, in the order they began: a call is held until every call that began before it has
    ended, so the file is sorted by `at` while the meter runs (a long meter's trace is written as it goes)."""

    def __init__(self, path: Path, origin: float):
        self.path, self.origin = path, origin
        # An earlier trace (--overwrite) is replaced at the first call written: a run that stops before any (ingest's
        # target checks, exit 2) leaves it as it was (it was a header alone). A new trace has its header at once.
        self._file: IO[str] | None = None
        if not path.exists():
            self._opened()
        self._key = secrets.token_bytes(32)  # drawn per trace, never written: a hash confirms no guessed body
        self._in_flight: dict[float, int] = {}
        self._done: list[tuple[float, int, TraceCall]] = []
        self._seq = 0
        self._lock = threading.Lock()
        self.measure: Callable[[str], int] = len  # a text's length: characters, or a tokenizer's (count_tokens_with)
        self.unit = TraceUnit.CHARS
        self._shaper: ThreadPoolExecutor | None = None  # with a tokenizer: calls are shaped off the client's path

    def count_tokens_with(self, measure: Callable[[str], int]) -> None:
        """`meter --record FILE --tokenizer PATH`: each text's length in that tokenizer's tokens (unit `tokens`),
        counted on one thread of the writer's (milliseconds a call: never added to a client's reply)."""
        self.measure, self.unit = measure, TraceUnit.TOKENS
        self._shaper = ThreadPoolExecutor(1, thread_name_prefix="ragbench-trace")

    def end_shaped(self, start: float, shape: Callable[[], TraceCall | None]) -> None:
        """`end(start, shape())`, on the writer's thread when it counts tokens, else here."""
        if self._shaper is None:
            self.end(start, shape())
        else:
            self._shaper.submit(lambda: self.end(start, shape()))

    def digest(self, body: bytes) -> str:
        """The body's hash in this trace: equal bodies alike, nothing to check a guess against."""
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()[:HASH_CHARS]

    def begin(self, start: float) -> None:
        with self._lock:
            self._in_flight[start] = self._in_flight.get(start, 0) + 1

    def end(self, start: float, call: TraceCall | None) -> None:
        """The call begun at `start` has ended; None: it is no model call (no body) and is not written."""
        with self._lock:
            left = self._in_flight.pop(start, 1) - 1
            if left > 0:
                self._in_flight[start] = left
            self._seq += 1
            if call is not None:
                heapq.heappush(self._done, (start, self._seq, call))
            first_open = min(self._in_flight, default=math.inf)
            while self._done and self._done[0][0] <= first_open:
                self._opened().write(json.dumps(heapq.heappop(self._done)[2].to_json()) + "\n")
            if self._file is not None:
                self._file.flush()

    def _opened(self) -> IO[str]:
        if self._file is None:
            self._file = self.path.open("w", encoding="utf-8")
            header = {"format": TRACE_FORMAT, "version": TRACE_VERSION, "hash": HASH_SCHEME}
            self._file.write(json.dumps(header) + "\n")
        return self._file

    def close(self) -> None:
        if self._shaper is not None:  # every call shaped and handed to `end` first
            self._shaper.shutdown(wait=True)
        with self._lock:
            while self._done:
                self._opened().write(json.dumps(heapq.heappop(self._done)[2].to_json()) + "\n")
            if self._file is not None:
                self._file.close()


def is_trace_file(path: Path) -> bool:
    """Whether `path` is a trace ragbench wrote (its first line the trace header): the one kind of file a
    `--record` may replace (bench/results/outdir.py check_out_file)."""
    try:
        with path.open(encoding="utf-8") as file:
            header = loads(file.readline(64 * 1024))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(header, dict) and header.get("format") == TRACE_FORMAT


def read_trace(path: Path) -> list[TraceCall]:
    """A trace file's calls (JSONL, or CSV by its `.csv` name), checked: a malformed line, calls out of order, a
    length past MAX_LENGTH or no call at all is an InputError naming the file and line (exit 2)."""
    try:
        # utf-8-sig: a CSV saved by a spreadsheet opens with a BOM, which would make its first column "\ufeffat"
        with path.open(encoding="utf-8-sig", newline="") as file:
            rows = _csv_rows(file) if path.suffix.lower() == ".csv" else _jsonl_rows(path, file)
            placed = [(row.line, _checked_call(path, row)) for row in rows]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the trace: {exc}") from None
    if not placed:
        raise InputError(path, "the trace holds no call")
    for (_, before), (line, call) in itertools.pairwise(placed):
        if call.at < before.at:
            raise InputError(path, f"calls out of order: at {call.at:g} after {before.at:g}", line)
    return [call for _, call in placed]


Choice = TypeVar("Choice", bound=StrEnum)


@dataclass(frozen=True)
class _Row:
    """A line as read (its number, its JSON object or CSV row), before its values are checked one by one
    (`_checked_call`): the trace file's JSON edge, so its values are `object`, not a known type."""

    line: int
    values: dict[str, object]


def _jsonl_rows(path: Path, file: IO[str]) -> Iterator[_Row]:
    for line, text in enumerate(file, 1):
        if not text.strip():
            continue
        try:
            row = loads(text)
        except ValueError:
            raise InputError(path, "not a JSON object", line) from None
        if not isinstance(row, dict):
            raise InputError(path, "not a JSON object", line)
        if "format" in row:
            if row.get("format") != TRACE_FORMAT or row.get("version") != TRACE_VERSION:
                raise InputError(path, f"a trace header of {TRACE_FORMAT} version {TRACE_VERSION} expected", line)
            continue
        yield _Row(line, row)


def _csv_rows(file: IO[str]) -> Iterator[_Row]:
    reader = csv.DictReader(file)
    for row in reader:
        lengths = row.get("lengths") or ""
        cells = {k: (v if v != "" else None) for k, v in row.items() if k is not None}
        yield _Row(reader.line_num, {**cells, "lengths": lengths.split(";") if lengths else []})


_KINDS = {int: "an integer", float: "a number"}  # a column's type as a message says it ("expected an integer")


def _number(value: object, name: str, kind: type, low: float, high: float, optional: bool) -> Any:
    """`value`, the column `name`, as a `kind` number from `low` to `high` (None where empty and `optional`)."""
    if value is None and optional:
        return None
    try:
        number = kind(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
        if isinstance(value, str) and not value.isascii():  # int() reads other scripts' digits: no number here
            number = None
    except (ValueError, OverflowError):  # int(inf) overflows: JSON's Infinity reads as a float
        number = None
    if kind is int and isinstance(value, float) and not value.is_integer():
        number = None
    if number is None or not math.isfinite(number) or not low <= number <= high:
        raise ValueError(f"{name} {value!r}: expected {_KINDS[kind]} from {low:g} to {high:g}")
    return number


def _choice(value: object, name: str, kind: type[Choice], default: Choice | None) -> Choice:
    """`value`, the column `name`, as one of `kind`'s values (`default` where it is empty); said by name when it is
    not."""
    if value is None and default is not None:
        return default
    allowed = ", ".join(member.value for member in kind)
    if value is None:
        raise ValueError(f"{name}: missing (one of {allowed})")
    try:
        return kind(str(value))
    except ValueError:
        raise ValueError(f"{name} {value!r}: expected one of {allowed}") from None


def _checked_call(path: Path, read: _Row) -> TraceCall:
    row = read.values
    try:
        unit = _choice(row.get("unit"), "unit", TraceUnit, TraceUnit.CHARS)
        kind = _choice(row.get("kind"), "kind", CallKind, None)
        limit = MAX_LENGTH[unit]
        raw = row.get("lengths")
        if not isinstance(raw, list):
            raise ValueError("lengths: expected a list of text lengths")
        lengths = tuple(_number(v, "length", int, 0, limit, False) for v in raw)
        texts = _number(row.get("texts"), "texts", int, 0, 10**6, True)
        if texts is not None and texts != len(lengths):
            raise ValueError(f"texts {texts} but {len(lengths)} lengths")
        route = row.get("route")
        if not isinstance(route, str) or not route:
            raise ValueError("route: expected a name")
        hashed = row.get("hash")
        return TraceCall(
            at=_number(row.get("at"), "at", float, 0, 1e9, False),
            route=route,
            kind=kind,
            lengths=lengths,
            unit=unit,
            tokens=_number(row.get("tokens"), "tokens", int, 0, limit * 10**6, True),
            query=_number(row.get("query"), "query", int, 0, limit, True),
            status=_number(row.get("status"), "status", int, 100, 599, True),
            latency=_number(row.get("latency"), "latency", float, 0, 1e6, True) or 0.0,
            hash=hashed if isinstance(hashed, str) else None,
        )
    except ValueError as exc:  # an unknown kind or unit is a ValueError too
        raise InputError(path, str(exc), read.line) from None
