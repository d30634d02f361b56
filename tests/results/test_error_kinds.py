"""The one error record type load points, ingest calls and grow rungs read their errors as (issue 49)."""

from __future__ import annotations

from pathlib import Path

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


def test_growth_law_names_read_as_the_enum(tmp_path: Path) -> None:
    """A grow summary's law and credible laws read back as LawName members, written as the same strings."""
    import json

    from bench.core.growth_laws import LawName
    from bench.results.schema import GrowSummaryRecord, GrowthLaw
    from bench.results.typed import typed_record
    from bench.results.writer import record_line

    law = GrowthLaw("p99", LawName.N_LOG_N, 1.0, 0.5, 0.01, 0.02, 4, credible_laws=[LawName.N_LOG_N, LawName.LINEAR])
    summary = GrowSummaryRecord("t", None, 400, None, None, [law], {}, "answer")
    line = record_line(summary)
    assert '"law": "n log n"' in line and '"credible_laws": ["n log n", "linear"]' in line
    read = typed_record(GrowSummaryRecord, json.loads(line), tmp_path / "results.jsonl", 1)
    assert isinstance(read, GrowSummaryRecord)
    assert read.laws[0].law is LawName.N_LOG_N and read.laws[0].credible_laws == [LawName.N_LOG_N, LawName.LINEAR]
    assert all(isinstance(name, LawName) for name in read.laws[0].credible_laws)
