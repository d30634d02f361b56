"""Every number a user gives is bounded (bench/core/values.py): out of range, infinite or negative is one line
and exit 2, before anything is sent or written — the same bounds and lines from a suite file as from the command
line."""

from __future__ import annotations

import json

import pytest

from bench.core import values
from bench.core.errors import UserError
from tests.harness.cli import run_cli

LOAD = ["load", "-e", "x=tei@http://127.0.0.1:9"]
SIZE = ["size", "-e", "x=tei@http://127.0.0.1:9", "--slo-p99", "100"]
QUALITY = ["quality", "--dataset", "nowhere", "-t", "bm25"]
TOO_MUCH = [
    ([*LOAD, "--batch", "100000000000000000000"], "--batch '100000000000000000000': at most 4,096 texts per request"),
    ([*LOAD, "--lengths", "99999999"], "--lengths '99999999': at most 32,768 tokens per text"),
    ([*LOAD, "--burst", "1000000000000"], "--burst 1000000000000: at most 100,000 texts in a burst"),
    ([*LOAD, "--rate", "1e9"], "--rate '1e9': at most 1,000,000 requests/s offered"),
    ([*LOAD, "--rate", "1e8"], "--rate '1e8': at most 1,000,000 requests/s offered"),
    ([*LOAD, "--concurrency", "100000"], "--concurrency '100000': at most 4,096 requests in flight"),
    ([*LOAD, "--requests", "99999999999"], "--requests 99999999999: at most 10,000,000 requests per point"),
    ([*LOAD, "--workers", "100000"], "--workers 100000: at most 1,024 worker processes"),
    ([*LOAD, "--timeout", "1e400s"], "--timeout '1e400s': expected a positive duration"),
    ([*LOAD, "--duration", "99999h"], "--duration '99999h': at most 86,400 s"),
    ([*LOAD, "--seed", "-1"], "--seed -1: expected a whole number from 0 to 9,223,372,036,854,775,807 (seed)"),
    # Products of values in range: the schedule an open loop computes first, the requests every worker holds.
    ([*LOAD, "--rate", "100000", "--duration", "200s"], "20,200,000 requests per point, at most 10,000,000"),
    ([*LOAD, "--batch", "4096", "--lengths", "32768"], "bytes of encoded requests, at most 2,147,483,648"),
    ([*SIZE, "--batch", "4096", "--lengths", "32768"], "bytes of encoded requests, at most 2,147,483,648"),
    ([*SIZE[:-2], "--slo-p99", "inf"], "--slo-p99 inf: expected a positive number up to 3,600,000 (milliseconds)"),
    ([*SIZE[:-2], "--slo-p99", "1e400"], "--slo-p99 inf: expected a positive number up to 3,600,000 (milliseconds)"),
    ([*SIZE, "--max-concurrency", "1000000"], "--max-concurrency 1000000: at most 4,096 requests in flight"),
    ([*SIZE, "--target-rps", "inf"], "--target-rps inf: expected a positive number"),
    ([*SIZE, "--seed", "-1"], "--seed -1: expected a whole number from 0"),
    (["ceiling", "--peak-tflops", "inf"], "--peak-tflops inf: expected a positive number up to 100,000 (TFLOP/s)"),
    (
        ["ceiling", "--batch", "100000000000000000000"],
        "--batch '100000000000000000000': at most 4,096 texts per request",
    ),
    (["ceiling", "--seconds", "inf"], "--seconds inf: expected a positive number"),
    ([*QUALITY, "--depth", "1000000"], "--depth 1000000: at most 100,000 documents ranked per query"),
    ([*QUALITY, "--depth", "0"], "--depth 0: expected a whole number from 1 to 100,000 (documents ranked per query)"),
    ([*QUALITY, "--rerank-depth", "1000000"], "--rerank-depth 1000000: at most 100,000 documents re-scored per query"),
    ([*QUALITY, "--rerank-depth", "-1"], "--rerank-depth -1: expected a whole number from 1 to 100,000"),
    ([*QUALITY, "-e", "x=tei@http://127.0.0.1:9?batch=100000"], "endpoint x: batch '100000': at most 4,096 texts"),
    ([*QUALITY, "-e", "x=openai@http://h:1?model=m&concurrency=9999"], "concurrency '9999': at most 4,096 requests"),
    ([*QUALITY, "-e", "x=tei@http://127.0.0.1:9?concurrency=true"], "concurrency 'true': expected a whole number"),
    ([*QUALITY, "-e", "x=reference?batch=0"], "endpoint x: batch '0': expected a whole number from 1 to 4,096"),
    ([*LOAD[:1], "-e", "x=tei@http://127.0.0.1:9?batch=1e9"], "endpoint x: batch '1e9': expected a whole number"),
    ([*QUALITY, "-e", "x=tei@http://h:1", "--background", "x@rate="], "rate= is empty"),
    ([*QUALITY, "--hourly-usd", "inf"], "--hourly-usd inf: expected a positive number up to 1,000,000"),
    ([*QUALITY, "--hourly-usd", "0"], "--hourly-usd 0.0: expected a positive number"),
    ([*QUALITY, "-e", "x=tei@http://h:1", "--background", "x@rate=1e-999"], "rate 1e-999 rounds to 0 requests/s"),
]


@pytest.mark.parametrize(
    "args, words", TOO_MUCH, ids=[" ".join(a[len(LOAD) if a[0] != "ceiling" else 1 :]) for a, _ in TOO_MUCH]
)
def test_values_past_their_bounds_are_one_line_before_any_work(args, words, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli([*args, "--out", str(out)], monkeypatch, capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragbench: error: ") and words in lines[0], err
    assert not out.exists()


def test_compare_refuses_a_negative_seed(tmp_path, monkeypatch, capsys):
    code, _, err = run_cli(["compare", str(tmp_path), str(tmp_path), "--seed", "-1"], monkeypatch, capsys)
    assert (code, err) == (
        2,
        "ragbench: error: --seed -1: expected a whole number from 0 to 9,223,372,036,854,775,807 (seed)\n",
    )


def test_a_suite_file_gets_the_same_bounds_and_lines(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "suite.toml"
    suite.write_text("""
[endpoints]
x = "tei@http://127.0.0.1:9"
[[load]]
name = "seed"
endpoints = ["x"]
seed = -1
[[load]]
name = "rate"
endpoints = ["x"]
rate = [1e8]
""")
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    # the whole file is checked before any job runs: the first bad value, at its line
    assert (code, out) == (2, "")
    assert err == (
        f"ragbench: error: {suite}:7: load #1: --seed -1: expected a whole number from 0 to "
        "9,223,372,036,854,775,807 (seed)\n"
    )
    suite.write_text(suite.read_text().replace("seed = -1", "seed = 1"))
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert (code, out) == (2, "")
    assert err == (
        f"ragbench: error: {suite}:11: load #2: --rate '100000000.0': at most 1,000,000 requests/s offered "
        f"({values.RATE.why})\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_quality_seed_from_a_suite_is_checked_by_the_function_the_option_reaches(tmp_path):
    from bench.commands.quality import QualityRequest, quality_command

    with pytest.raises(UserError, match=r"^--seed -1: expected a whole number from 0"):
        quality_command(QualityRequest(dataset=tmp_path, targets=["bm25"], out=tmp_path / "out", seed=-1))


@pytest.mark.parametrize("depth", [100_000, 600])  # past json's own limit; within it but past what masking can walk
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_deeply_nested_results_line_is_one_line_with_its_place(depth, command, tmp_path, monkeypatch, capsys):
    header = {
        "record": "run",
        "schema": "ragbench.results",
        "version": 2,
        "command": "load",
        "created": "",
        "ragbench_version": "",
        "dataset": {},
        "measures": [],
        "measure_labels": {},
        "depth": 0,
        "seed": 0,
        "targets": [],
    }
    results = tmp_path / "results.jsonl"
    results.write_text(
        json.dumps(header) + "\n" + '{"record": "load_point", "client": ' + "[" * depth + "]" * depth + "}\n"
    )
    args = (
        ["compare", str(results), str(results)]
        if command == "compare"
        else ["report", str(results), "--out", str(tmp_path / "r")]
    )
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert (code, err) == (2, f"ragbench: error: {results}:2: malformed JSON (nested too deeply)\n")


@pytest.mark.parametrize("field", ["depth", "rerank_depth"])
def test_a_quality_depth_from_a_suite_is_bounded_and_a_boolean_is_not_a_number(field, tmp_path):
    from bench.commands.quality import QualityRequest, quality_command

    flag = "--" + field.replace("_", "-")
    for value, words in ((True, f"{flag} True: expected a whole number"), (10**6, f"{flag} 1000000: at most")):
        with pytest.raises(UserError, match=f"^{words}"):
            quality_command(QualityRequest(dataset=tmp_path, targets=["bm25"], out=tmp_path / "out", **{field: value}))
    assert not (tmp_path / "out").exists()


def test_the_parser_reads_text_and_typed_values_alike():
    assert values.number_list("--rate", " 0.5, 200 ", values.RATE) == [0.5, 200.0]
    with pytest.raises(UserError, match=r"--concurrency '4,8,4': 4 is listed twice"):
        values.number_list("--concurrency", "4,8,4", values.USERS)
    assert values.number("--workers", 4, values.WORKERS) == values.number("--workers", "4", values.WORKERS) == 4
    assert values.duration("--warmup", "0", values.WARMUP_SECONDS) == 0.0
    assert values.duration("--duration", "1.5e1s", values.SECONDS) == 15.0
    for bad in (True, 2.5, "2.5", "nan", "inf", ""):
        with pytest.raises(UserError):
            values.number("--workers", bad, values.WORKERS)
    with pytest.raises(UserError, match="expected a positive duration"):
        values.duration("--duration", "0s", values.SECONDS)
