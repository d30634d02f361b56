"""`ragbench load` flags: every bad one is one line on stderr and exit 2, before anything is written."""

from __future__ import annotations

import pytest

from tests.harness.cli import run_cli

BAD = [
    (["--rate", "10", "--burst", "5"], "--rate (open loop) and --burst"),
    (["--batch", "0"], "--batch '0'"),
    (["--batch", "1,x"], "--batch '1,x'"),
    (["--concurrency", "-1"], "--concurrency '-1'"),
    (["--rate", "nan"], "--rate 'nan'"),
    (["--duration", "5x"], "--duration '5x'"),
    (["--duration", "1s", "--requests", "5"], "--duration or --requests"),
    (["--warmup", "-1s"], "--warmup '-1s'"),
    (["--arrival", "gamma:0"], "--arrival 'gamma:0'"),
    (["--op", "classify"], "--op 'classify'"),
    (["--op", "rerank"], "is an embedding endpoint"),
    (["--max-inflight", "4"], "--max-inflight caps the open loop"),
    (["--rate", "5", "--concurrency", "2"], "--concurrency sets the closed loop"),
    (["--documents", "10"], "--documents is for --op rerank"),
    (["--workers", "0"], "--workers 0"),
    (["--max-error-rate", "1.5"], "--max-error-rate 1.5"),
    (["--max-error-rate", "nan"], "--max-error-rate nan"),
    (["--texts", "/nonexistent/texts.txt"], "/nonexistent/texts.txt"),
]


@pytest.mark.parametrize("flags,message", BAD, ids=[" ".join(f) for f, _ in BAD])
def test_bad_flags_are_one_line_and_exit_2(flags, message, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    code, _stdout, stderr = run_cli(
        ["load", "-e", "x=tei@http://127.0.0.1:9", *flags, "--out", str(out)], monkeypatch, capsys
    )
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragbench: error: ") and message in lines[0], stderr
    assert not out.exists()


@pytest.mark.parametrize("command", [["load"], ["size", "--slo-p99", "50"]])
def test_unreachable_endpoint_is_one_line_and_nothing_is_written(command, tmp_path, monkeypatch, capsys):
    """A wrong URL is a user error found by the preflight, before --out is touched: fixing the URL and running
    again needs no --overwrite (an empty run in --out would refuse it)."""
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [*command, "-e", "x=tei@http://127.0.0.1:9", "--duration", "0.2s", "--out", str(out)], monkeypatch, capsys
    )
    assert code == 2 and "cannot reach" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists() and "report:" not in stdout
