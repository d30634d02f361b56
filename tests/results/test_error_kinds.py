"""The one error record type load points, ingest calls and grow rungs read their errors as (issue 49)."""

from __future__ import annotations

import pytest

from bench.results.schema.kinds import ErrorCount, ErrorKind, error_key


@pytest.mark.parametrize(
    ("key", "kind", "status"),
    [
        ("http-400", ErrorKind.HTTP, 400),  # grow
        ("429", ErrorKind.HTTP, 429),  # load's Outcome, ingest's status class
        ("5xx", ErrorKind.HTTP, None),
        ("timeout", ErrorKind.TIMEOUT, None),
        ("too_large", ErrorKind.TOO_LARGE, None),
        ("no-answer", ErrorKind.ERROR, None),  # a class this vocabulary does not name: counted, as an error
    ],
)
def test_error_classes_parse(key: str, kind: ErrorKind, status: int | None) -> None:
    assert ErrorCount.parse_key(key) == (kind, status)


def test_error_counts_keep_the_record_order() -> None:
    counts, examples = {"timeout": 1, "http-502": 3}, {"http-502": "HTTP 502: bad gateway"}
    typed = ErrorCount.of(counts, examples)
    assert [e.key for e in typed] == ["timeout", "http-502"] and typed[0].first_message == ""
    assert typed[1] == ErrorCount(ErrorKind.HTTP, 502, "HTTP 502: bad gateway", 3, "http-502")


def test_grow_keys() -> None:
    assert error_key(ErrorKind.HTTP, 404) == "http-404" and error_key(ErrorKind.TIMEOUT) == "timeout"
