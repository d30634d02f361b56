"""`compare RUN`: an interleaved run gated on its own paired rounds, by compare's limits, with no baseline file."""

from __future__ import annotations

import json

import pytest

from tests.gate.helpers import interleaved_run, load_point, write_load_results
from tests.harness.cli import run_cli


def test_a_ten_percent_step_under_drift_fails_and_twins_pass(tmp_path, monkeypatch, capsys):
    step = interleaved_run(tmp_path / "step", 0.9)
    code, stdout, _ = run_cli(["compare", str(step), "--min-throughput-ratio", "0.95"], monkeypatch, capsys)
    assert code == 1 and "10 rounds paired" in stdout and "limit ×0.95: fail" in stdout, stdout
    twins = interleaved_run(tmp_path / "twins", 1.0, seed=1)
    code, stdout, _ = run_cli(["compare", str(twins), "--min-throughput-ratio", "0.95"], monkeypatch, capsys)
    assert code == 0 and "limit ×0.95: pass" in stdout, stdout


def test_compare_judges_by_its_own_limits_and_inconclusive_policy(tmp_path, monkeypatch, capsys):
    run = interleaved_run(tmp_path / "run", 0.9, noise=0.05)
    code, stdout, _ = run_cli(["compare", str(run), "--max-p99-increase", "50%"], monkeypatch, capsys)
    assert code == 0 and "limit ×1.5: pass" in stdout, stdout
    code, stdout, _ = run_cli(
        ["compare", str(run), "--min-throughput-ratio", "0.9", "--format", "json"], monkeypatch, capsys
    )
    (check,) = json.loads(stdout)["checks"]
    figure = next(f for f in check["figures"]["interleaved"] if f["figure"] == "texts_per_s")
    assert figure["ratio"]["low"] < 0.9 < figure["ratio"]["high"]  # the limit inside the interval
    assert check["figures"]["verdict"] == "inconclusive" and check["inconclusive"] and code == 0
    code, _, _ = run_cli(
        ["compare", str(run), "--min-throughput-ratio", "0.9", "--inconclusive", "fail"], monkeypatch, capsys
    )
    assert code == 1


@pytest.mark.parametrize(
    "extra,message",
    [
        ([], "no interleaved records"),
        (["--calibration", "X"], "--calibration and --history calibrate the noise between two runs"),
    ],
)
def test_compare_run_without_pairs_or_with_calibration_is_one_line_exit_2(
    extra, message, tmp_path, monkeypatch, capsys
):
    (tmp_path / "plain").mkdir()
    plain = write_load_results(tmp_path / "plain", [load_point("a")])
    code, _, stderr = run_cli(["compare", str(plain), *extra], monkeypatch, capsys)
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1, stderr
