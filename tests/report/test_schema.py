"""One results schema for every command: the committed JSON Schema is current, every record the commands
write validates against it, older files still load, and `ragbench report` renders every kind."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bench.identity.console import render
from bench.results.json_schema import schema_text
from bench.results.schema import RECORD_TYPES
from bench.results.store import read_results
from tests.paths import REPO
from tests.report.conftest import ragbench_exit

COMMITTED = REPO / "docs" / "results.schema.json"
# What each command's output must hold, so that validating it cannot pass on an empty file.
EXPECTED = {
    "quality": {"run", "target", "query", "metrics", "comparison", "end"},
    "quality_b": {"run", "target", "query", "metrics", "comparison", "end"},
    "identity": {"run", "identity_endpoint", "identity_embed_pair", "identity_rerank_pair", "identity", "end"},
    "doctor": {"run", "doctor_finding", "end"},
    "load": {"run", "load_point", "end"},
    "ceiling": {"run", "ceiling_point", "end"},
}


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_committed_json_schema_is_current():
    assert COMMITTED.read_text() == schema_text(), (
        "docs/results.schema.json is stale: run `python -m bench.results.json_schema docs/results.schema.json`"
    )


def test_schema_defines_every_record_type(validator):
    records = {one["$ref"].rsplit("/", 1)[1] for one in validator.schema["oneOf"]}
    assert records == set(RECORD_TYPES) and records <= set(validator.schema["$defs"])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_record_a_command_writes_validates(name, command_outputs, validator):
    records = _lines(command_outputs.folders()[name] / "results.jsonl")
    for number, record in enumerate(records, start=1):
        errors = [e.message for e in validator.iter_errors(record)]
        assert not errors, (name, number, record.get("record"), errors[:3])
    assert {r["record"] for r in records} == EXPECTED[name]
    assert records[0]["record"] == "run" and records[-1]["record"] == "end"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: r.update(ok="yes"), "a string where a boolean belongs"),
        (lambda r: r.update(surprise=1), "a field the schema does not know"),
        (lambda r: r.pop("message"), "a missing field"),
        (lambda r: r.update(record="doctor_findings"), "an unknown record type"),
    ],
)
def test_schema_rejects_a_wrong_record(change, why, command_outputs, validator):
    record = next(r for r in _lines(command_outputs.doctor / "results.jsonl") if r["record"] == "doctor_finding")
    assert validator.is_valid(record)
    change(record)
    assert not validator.is_valid(record), why


def test_not_finite_floats_are_null_in_the_file_and_nan_when_read(command_outputs, tmp_path, validator):
    lines = _lines(command_outputs.quality / "results.jsonl")
    comparison = next(r for r in lines if r["record"] == "comparison")
    comparison["p_ttest"] = None  # what the writer writes for NaN (e.g. a t-test over identical scores)
    assert validator.is_valid(comparison)
    path = tmp_path / "results.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in lines if r["record"] != "comparison") + json.dumps(comparison) + "\n"
    )
    p = read_results(path).comparisons[0].p_ttest
    assert p != p  # NaN


def test_identity_prints_what_its_results_file_holds(command_outputs, capsys):
    """The terminal text is rendered from the same records the file holds: nothing printed is lost."""
    text = render(read_results(command_outputs.identity / "results.jsonl"))
    assert "cause [whitespace_stripped]: srv removes line breaks before encoding" in text
    assert "rr ~ co" in text and "verdict: FAIL" in text
    records = {r["record"]: r for r in _lines(command_outputs.identity / "results.jsonl")}
    assert (
        records["identity"]["verdict"] == "fail"
        and records["identity_embed_pair"]["causes"][0]["code"] == "whitespace_stripped"
    )
    assert records["identity_rerank_pair"]["verdict"] == "pass"


@pytest.mark.slow  # loads the reference model (twice)
def test_identity_legacy_json_file_still_written(tmp_path):
    """`--out FILE.json` keeps writing the single document of schema ragbench.identity v1."""
    texts = tmp_path / "t.txt"
    words = ["cats", "bread", "sea", "rome", "light", "trade", "mats", "rain", "stars", "music"]
    texts.write_text(
        "".join(f"text {i} about {words[i % 10]} and {words[(i * 3) % 10]}\n" for i in range(40))
    )  # enough to judge
    out = tmp_path / "id.json"
    assert (
        ragbench_exit("identity", "-e", "a=reference", "-e", "b=reference", "--texts", str(texts), "--out", str(out))
        == 0
    )
    document = json.loads(out.read_text())
    assert (document["schema"], document["version"], document["verdict"]) == ("ragbench.identity", 1, "pass")
    assert not (tmp_path / "results.jsonl").exists()


def test_report_of_a_folder_renders_every_kind(command_outputs, tmp_path, capsys):
    for folder in command_outputs.folders().values():
        (folder / "report.html").unlink()
    assert ragbench_exit("report", str(command_outputs.root)) == 0
    printed = capsys.readouterr().out
    titles = {
        "quality": "ragbench quality report",
        "quality_b": "ragbench quality report",
        "identity": "ragbench identity report",
        "doctor": "ragbench doctor report",
        "load": "ragbench load report",
        "ceiling": "ragbench ceiling report",
    }
    for name, folder in command_outputs.folders().items():
        html = (folder / "report.html").read_text()
        assert f"report: {folder / 'report.html'}" in printed
        assert f"<title>{titles[name]}</title>" in html and f"<h1>{titles[name]}</h1>" in html
    assert "whitespace_stripped" in (command_outputs.identity / "report.md").read_text()
    assert (
        "| openwebui | BAD | no API key in $OPENWEBUI_API_KEY |" in (command_outputs.doctor / "report.md").read_text()
    )


def test_version_1_file_still_loads_and_renders(command_outputs, tmp_path):
    lines = _lines(command_outputs.quality / "results.jsonl")
    lines[0]["version"] = 1
    path = tmp_path / "v1" / "results.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert ragbench_exit("report", str(path)) == 0
    assert read_results(path).header.version == 1
    assert "<h1>ragbench quality report</h1>" in (path.parent / "report.html").read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"record": "run", "schema": "ragbench.results", "version": 2, "command": "mystery", "created": "x", '
            '"ragbench_version": "0"}\n',
            "no report for the records of command 'mystery'",
        ),
        (
            '{"record": "run", "schema": "ragbench.results", "version": 4, "command": "quality", "created": "x", '
            '"ragbench_version": "0"}\n',
            "results schema version 4",
        ),
    ],
)
def test_report_of_an_unreadable_file_is_one_line_and_exit_2(content, message, tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    path.write_text(content)
    assert ragbench_exit("report", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ragbench: error: {path}:") and message in err and err.count("\n") == 1


def test_report_of_an_empty_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert ragbench_exit("report", str(tmp_path)) == 2
    assert capsys.readouterr().err == f"ragbench: error: {tmp_path}: no results.jsonl in this folder or below\n"
