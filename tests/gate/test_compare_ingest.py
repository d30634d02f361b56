"""`compare`'s ingest checks: each combination's docs/s ratio under `--min-ingest-ratio`, documents failed or lost
always gated, a combination in one run only or unmeasured in either said and not gated, in every output."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bench.results.schema import IngestPointRecord, IngestStatus
from bench.results.writer import ResultsWriter
from tests.harness.records import end_record, ingest_point, run_header

OWUI = "openwebui@http://owui:8080"
FAST = "RAG_EMBEDDING_BATCH_SIZE=32"


def _write(folder: Path, points: list[IngestPointRecord]) -> Path:
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(run_header("ingest", dataset={"name": "scifact", "documents": 20}), *points, end_record())
    writer.close()
    return folder / "results.jsonl"


def _runs(tmp_path: Path, base: list[IngestPointRecord], cur: list[IngestPointRecord]) -> tuple[Path, Path]:
    return _write(tmp_path / "base", base), _write(tmp_path / "cur", cur)


def _ingest(out: str) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(out)["checks"] if c["kind"] == "ingest"}


@pytest.mark.parametrize("docs_per_s, failing", [(10.0, False), (9.0, False), (8.9, True)])
def test_a_slower_combination_fails_below_the_ratio(tmp_path, compare, docs_per_s, failing):
    base, cur = _runs(tmp_path, [ingest_point(OWUI, FAST)], [ingest_point(OWUI, FAST, docs_per_s=docs_per_s)])
    code, out, _ = compare(base, cur, "--min-ingest-ratio", "0.9", "--format", "json")
    check = _ingest(out)[f"{OWUI} {FAST}"]
    assert (code, check["status"]) == ((1, "fail") if failing else (0, "pass")), out
    assert check["figures"]["docs_per_s_ratio"] == pytest.approx(docs_per_s / 10.0)
    assert check["figures"]["not_gated"] == []


def test_more_lost_documents_fail_even_without_the_flag(tmp_path, compare):
    lossy = ingest_point(OWUI, FAST, status=IngestStatus.LOST, processed=18, failed=1, lost=1, docs_per_s=12.0)
    base, cur = _runs(tmp_path, [ingest_point(OWUI, FAST)], [lossy])
    code, out, _ = compare(base, cur)
    assert code == 1, out
    assert (
        f"FAIL  ingest: {OWUI} {FAST}: docs/s 10.00 → 12.00 (×1.200), documents failed or lost 0 of 20 → 2 of 20 "
        "(more documents failed or lost than the baseline fails); docs/s not gated: no --min-ingest-ratio"
    ) in out
    same = _write(tmp_path / "same", [lossy])  # another run as lossy (one run against itself is refused)
    code, out, _ = compare(cur, same)  # as many lost as the baseline: passes
    assert code == 0 and f"pass  ingest: {OWUI} {FAST}:" in out, out


def test_the_same_losses_pass_and_fewer_pass(tmp_path, compare):
    lossy = ingest_point(OWUI, FAST, status=IngestStatus.LOST, processed=18, failed=1, lost=1)
    base, cur = _runs(tmp_path, [lossy], [ingest_point(OWUI, FAST, status=IngestStatus.LOST, processed=19, lost=1)])
    code, out, _ = compare(base, cur, "--format", "json")
    check = _ingest(out)[f"{OWUI} {FAST}"]
    assert (code, check["status"]) == (0, "pass"), out
    assert (check["figures"]["baseline_failed_or_lost"], check["figures"]["current_failed_or_lost"]) == (2, 1)


def test_nothing_processed_is_zero_docs_per_s(tmp_path, compare):
    gone = ingest_point(OWUI, FAST, status=IngestStatus.LOST, processed=0, lost=20, docs_per_s=None)
    base, cur = _runs(tmp_path, [ingest_point(OWUI, FAST)], [gone])
    code, out, _ = compare(base, cur, "--min-ingest-ratio", "0.9", "--format", "json")
    check = _ingest(out)[f"{OWUI} {FAST}"]
    assert code == 1 and check["figures"]["current_docs_per_s"] == 0.0 and check["figures"]["docs_per_s_ratio"] == 0


def test_one_run_only_and_unmeasured_are_said_not_gated_in_every_output(tmp_path, compare):
    refused = ingest_point(OWUI, "CHUNK_SIZE=9", status=IngestStatus.FAILED, error="the server refused CHUNK_SIZE=9")
    base_points = [ingest_point(OWUI, FAST), ingest_point(OWUI, "RAG_EMBEDDING_BATCH_SIZE=1"), refused]
    cur_points = [ingest_point(OWUI, FAST, docs_per_s=5.0), ingest_point(OWUI, "CHUNK_SIZE=9")]
    cur_points.append(ingest_point("lightrag@http://lr:9621", "default", kind="lightrag"))
    base, cur = _runs(tmp_path, base_points, cur_points)
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    code, out, _ = compare(base, cur, "--min-ingest-ratio", "0.9", "--junit", junit, "--summary", summary)
    assert code == 1, out  # the FAST combination halved
    assert f"FAIL  ingest: {OWUI} {FAST}: docs/s 10.00 → 5.00 (×0.500)" in out
    said = {
        f"{OWUI} RAG_EMBEDDING_BATCH_SIZE=1": "measured in the baseline run only",
        f"{OWUI} CHUNK_SIZE=9": "could not be measured in the baseline run: the server refused CHUNK_SIZE=9",
        "lightrag@http://lr:9621 default": "measured in the current run only",
    }
    for name, why in said.items():
        assert f"info  ingest: {name}: not gated: {why}" in out
    md = summary.read_text()
    assert (
        "### ingest" in md and f"| ❌ **FAIL** | {OWUI} {FAST} | 10.00 → 5.00 | 0.500 | 0 of 20 → 0 of 20 | – |" in md
    )
    assert all(f"- ℹ️ ingest: {name} — {why}" in md for name, why in said.items()), md
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases[f"{OWUI} {FAST}"].find("failure") is not None
    assert all(cases[name].find("skipped").get("message") == f"not gated: {why}" for name, why in said.items())


def test_a_renamed_target_is_paired_by_match(tmp_path, compare):
    moved = "openwebui@http://owui-2:8080"
    base, cur = _runs(tmp_path, [ingest_point(OWUI, FAST)], [ingest_point(moved, FAST, docs_per_s=9.5)])
    code, out, _ = compare(base, cur, "--min-ingest-ratio", "0.9", "--match", f"{OWUI}={moved}", "--format", "json")
    check = _ingest(out)[f"{moved} {FAST} (baseline {OWUI})"]
    assert (code, check["status"]) == (0, "pass"), out
