"""Closed vocabularies the records of several commands share: the target kinds (quality, ingest, grow) and the
error kinds failed requests are counted by (load points, ingest calls, grow rungs), with the one error record type
they read as.

On disk the errors stay what every version wrote, two JSON objects keyed by the error class (`errors`: class ->
count, `error_examples`: class -> first message): old files read, and files written now read in an older ragbench.
`ErrorCount` is their typed view, built from those two maps (its `key` the class they are keyed by)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class TargetKind(StrEnum):
    """The target kinds a spec names (`kind[:variant]...`): the local engines, then the served stacks."""

    BM25 = "bm25"
    DENSE = "dense"
    HYBRID = "hybrid"
    OPENWEBUI = "openwebui"
    LIGHTRAG = "lightrag"


class ErrorKind(StrEnum):
    """What a failed request was: an HTTP answer (its status beside it), no answer in time, no connection, a body
    over the server's limit, an answer of the wrong shape, the in-process endpoint's exception, or anything else."""

    HTTP = "http"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    TOO_LARGE = "too_large"
    BAD_RESPONSE = "bad_response"
    CLIENT = "client"
    ERROR = "error"


_HTTP_KEY = re.compile(r"(?:http-)?(\d{3}|\dxx)")  # grow's `http-400`, load's `429`, `5xx`


@dataclass(frozen=True)
class ErrorCount:
    """Failed requests of one kind (and HTTP status, where one was answered), with the first one's message."""

    kind: ErrorKind
    status: int | None  # the HTTP status; None: not an HTTP answer, or a class of them (`5xx`)
    first_message: str  # the first such request's message, the server's own words ("" where none was kept)
    count: int
    key: str  # the class as the record's maps key it (`http-400`, `429`, `5xx`, `timeout`)

    @classmethod
    def parse_key(cls, key: str) -> tuple[ErrorKind, int | None]:
        """The kind and status a record's error class names; a class this ragbench does not know is ERROR."""
        found = _HTTP_KEY.fullmatch(key)
        if found is not None:
            digits = found.group(1)
            return ErrorKind.HTTP, int(digits) if digits.isdigit() else None
        known = {k.value: k for k in ErrorKind}
        return known.get(key, ErrorKind.ERROR), None

    @classmethod
    def of(cls, counts: Mapping[str, int], examples: Mapping[str, str]) -> list[ErrorCount]:
        """Each class of a record's `errors` map, with its `error_examples` message, in the record's order."""
        return [cls(*cls.parse_key(key), examples.get(key, ""), count, key) for key, count in counts.items()]


def error_key(kind: ErrorKind, status: int | None = None) -> str:
    """The class a grow rung keys an error by: `http-NNN`, else the kind's name (`timeout`, `error`)."""
    return f"{ErrorKind.HTTP}-{status}" if kind == ErrorKind.HTTP and status is not None else kind.value
