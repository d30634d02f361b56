"""Results files written by ragbench 0.1.0 (schema version 2, before the records were typed) still read, and each
record read back is written out again as the very same JSON line: the typed records changed no key and no value.

The files under tests/results/v2/ are real writer output on tiny inputs: quality (bm25 twice on five documents),
load (the scripted TEI-shaped server), size (the queue server, --no-nvml), ceiling (the reference model on CPU),
doctor (a TEI fixture with truncation off), identity (reference vs a TEI fixture; reference-rerank vs two reranker
routes, one with raw scores)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

from bench.results.json_schema import results_schema
from bench.results.store import read_results
from bench.results.writer import record_line

V2 = Path(__file__).with_name("v2")
KINDS = ["quality", "load", "size", "ceiling", "doctor", "identity", "identity_rerank"]


@pytest.mark.parametrize("kind", KINDS)
def test_v2_file_reads_and_writes_back_the_same_lines(kind: str) -> None:
    path = V2 / f"{kind}.jsonl"
    results = read_results(path)
    assert results.header.version == 2 and results.end is not None and results.end.status == "complete"
    records = [results.header, *[r for rs in results.records.values() for r in rs], results.end]
    written = {record_line(r) for r in records}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(records) == len(lines)
    assert written == set(lines)
    validator = jsonschema.Draft202012Validator(results_schema())  # the schema generated from the typed records
    for line in lines:
        assert not [e.message for e in validator.iter_errors(json.loads(line))], line[:200]


def test_v2_load_point_figures() -> None:
    results = read_results(V2 / "load.jsonl")
    raw = [json.loads(line) for line in (V2 / "load.jsonl").open() if '"load_point"' in line]
    assert len(results.load_points) == len(raw) == 2
    for point, data in zip(results.load_points, raw):
        assert point.loop == "closed" and point.op == "embed" and point.batch == data["batch"]
        assert point.requests.sent == data["requests"]["sent"] > 0
        assert point.throughput.texts_per_s == data["throughput"]["texts_per_s"]
        assert point.latency_ms.service is not None
        assert point.latency_ms.service.p99 == data["latency_ms"]["service"]["p99"]
        assert point.latency_ms.scheduled is None  # a closed loop has no intended send times
        assert point.client.saturated is data["client"]["saturated"]


def test_v2_size_sizing_and_probes() -> None:
    results = read_results(V2 / "size.jsonl")
    loops = {p.loop for p in results.load_points}
    assert loops == {"closed", "open", "burst"}
    (sizing,) = results.sizing
    assert sizing.slo_p99_ms == 300 and sizing.lines
    assert all(line.setting and isinstance(line.evidence, list) for line in sizing.lines)


def test_v2_identity_and_doctor_verdicts() -> None:
    embed = read_results(V2 / "identity.jsonl")
    (pair,) = embed.of("identity_embed_pair")
    assert pair.verdict == "insufficient data" and not math.isnan(pair.cosine_mean)
    rerank = read_results(V2 / "identity_rerank.jsonl")
    verdicts = [(p.b, p.verdict) for p in rerank.of("identity_rerank_pair")]
    assert verdicts == [("raw", "fail"), ("loose", "pass"), ("loose", "fail")]
    assert [c.code for c in rerank.of("identity_rerank_pair")[0].causes] == ["raw_scores"]
    doctor = read_results(V2 / "doctor.jsonl")
    assert [f.ok for f in doctor.of("doctor_finding")] == [True, True, True, False]


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "quality"])  # quality's report reads its run files too
def test_v2_file_reports(kind: str, tmp_path: Path) -> None:
    from bench.report import write_report

    report = write_report(V2 / f"{kind}.jsonl", tmp_path)
    assert report.is_file() and (tmp_path / "report.md").read_text(encoding="utf-8").strip()


def test_v2_identity_console_names_the_causes() -> None:
    from bench.identity.console import render

    text = render(read_results(V2 / "identity_rerank.jsonl"))
    assert "cause [raw_scores]: raw returns raw logits" in text and "verdict: FAIL" in text
