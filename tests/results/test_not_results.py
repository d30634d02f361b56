"""A file that is no results file, given where one is read (compare, history, report): one line saying what it is
(issue 50's hostile pass: a meter trace given to compare said 'unknown record type None')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.core.errors import InputError
from bench.results.store import read_results


@pytest.mark.parametrize(
    ("first_line", "said"),
    [
        ({"format": "ragbench-trace", "version": 1, "hash": "hmac-sha256"}, "a traffic trace (meter --record)"),
        ({"query": "q1", "doc": "d1"}, "not a ragbench results record (no 'record' field)"),
        ({"record": "no_such_record"}, "unknown record type 'no_such_record'"),
    ],
)
def test_a_file_that_is_no_results_file_is_named_for_what_it_is(tmp_path: Path, first_line: dict, said: str):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(first_line) + "\n")
    with pytest.raises(InputError) as raised:
        read_results(path)
    assert said in str(raised.value) and ":1" in str(raised.value), raised.value
