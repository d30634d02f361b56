"""Results files written by ragbench before issue 49 typed the record fragments and closed the vocabularies (grow
rungs' `kind`, errors by kind, ingest settings) still read, and each record read back is written out again as the
very same JSON line.

tests/results/v3/ holds writer output of that code (tests/harness/records' builders through ResultsWriter): a grow
run of an Open WebUI target (a rung with errors http-400, timeout and error; a failed rung) and a bm25 target, and an
ingest run of two Open WebUI settings combinations (one losing documents)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bench.results.json_schema import results_schema
from bench.results.store import read_results
from bench.results.writer import record_line

V3 = Path(__file__).with_name("v3")
KINDS = ["grow", "ingest"]


@pytest.mark.parametrize("kind", KINDS)
def test_v3_file_reads_and_writes_back_the_same_lines(kind: str) -> None:
    path = V3 / f"{kind}.jsonl"
    results = read_results(path)
    assert results.header.version == 3 and results.end is not None and results.end.status == "complete"
    records = [results.header, *[r for rs in results.records.values() for r in rs], results.end]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(records) == len(lines)
    assert {record_line(r) for r in records} == set(lines)
    validator = jsonschema.Draft202012Validator(results_schema())
    for line in lines:
        assert not [e.message for e in validator.iter_errors(json.loads(line))], line[:200]


def test_v3_grow_errors_and_kinds() -> None:
    results = read_results(V3 / "grow.jsonl")
    rungs = results.grow_rungs
    assert [r.kind for r in rungs] == ["openwebui"] * 3 + ["bm25"]
    assert rungs[1].errors == {"http-400": 2, "timeout": 1, "error": 1}
    assert rungs[1].error_examples["http-400"] == "HTTP 400: bad request"


def test_v3_ingest_settings() -> None:
    points = read_results(V3 / "ingest.jsonl").ingest_points
    assert points[0].settings == {
        "RAG_EMBEDDING_BATCH_SIZE": 8,
        "ENABLE_RAG_HYBRID_SEARCH": True,
        "RAG_EMBEDDING_ENGINE": "openai",
    }
    assert points[1].failed_examples == {"doc-1": "HTTP 413: too large"}


@pytest.mark.parametrize("kind", KINDS)
def test_v3_file_reports(kind: str, tmp_path: Path) -> None:
    from bench.report import write_report

    report = write_report(V3 / f"{kind}.jsonl", tmp_path)
    assert report.is_file() and (tmp_path / "report.md").read_text(encoding="utf-8").strip()


def test_v3_grow_rung_kind_and_errors_are_typed() -> None:
    """Issue 49: a rung's kind is the TargetKind enum and its errors read as one ErrorCount per class."""
    from bench.results.schema.kinds import ErrorCount, ErrorKind, TargetKind

    rungs = read_results(V3 / "grow.jsonl").grow_rungs
    assert all(isinstance(r.kind, TargetKind) for r in rungs)
    assert rungs[3].kind is TargetKind.BM25
    counts = rungs[1].error_counts
    assert counts[0] == ErrorCount(ErrorKind.HTTP, 400, "HTTP 400: bad request", 2, "http-400")
    assert [(e.kind, e.status) for e in counts[1:]] == [(ErrorKind.TIMEOUT, None), (ErrorKind.ERROR, None)]
    assert {e.key: e.count for e in counts} == rungs[1].errors  # the classes as written, in order


def test_v3_ingest_kind_and_refused_calls_are_typed() -> None:
    from bench.results.schema.kinds import ErrorKind, TargetKind

    points = read_results(V3 / "ingest.jsonl").ingest_points
    assert points[0].kind is TargetKind.OPENWEBUI
    (refused,) = points[1].calls["embedding"].failed
    assert (refused.kind, refused.status, refused.count) == (ErrorKind.HTTP, 413, 2)
