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


def _budget_run(folder, busy_rounds: int, rounds: int = 20):
    """A --max-time run of `rounds` rounds at ×0.93 (±2%), its last `busy_rounds` the machine's (client lag 80 ms)."""
    import numpy as np

    from bench.gate import paired
    from bench.results.schema import InterleavedRecord, InterleavedRound

    rng = np.random.default_rng(3)
    made = []
    for i in range(rounds):
        x, y = 1000.0, 930.0 * float(np.exp(rng.normal(0, 0.02)))
        made.append(InterleavedRound(i + 1, "ab"[i % 2], x, y, None, None, None, None, y / x, None, None))
        if i >= rounds - busy_rounds:
            made[-1].too_busy, made[-1].current_loop_lag_p99_ms = "this machine was too busy: ...", 80.0
    figures, _ = paired.judged_figures(made, {}, anytime=True)
    record = InterleavedRecord("a", "b", "closed batch 8 conc 4", "service", made, figures, paired.NOT_GATED)
    record.max_time_s, record.stopped = 120.0, "the budget was spent: 20 rounds in 104 s"
    folder.mkdir()
    return write_load_results(folder, [load_point("a", texts_per_s=1000.0), load_point("b", texts_per_s=930.0), record])


def test_a_budget_run_is_judged_with_its_anytime_interval_and_busy_rounds_left_out(tmp_path, monkeypatch, capsys):
    """compare RUN on a --max-time record: with 15 of 20 rounds the machine's and the 5 carried undecided, 'too
    busy to decide', counted as --inconclusive says (pass by default); every round carried, ×0.93 fails ×0.95."""
    run = _budget_run(tmp_path / "busy", busy_rounds=15)
    code, stdout, _ = run_cli(
        ["compare", str(run), "--min-throughput-ratio", "0.95", "--format", "json"], monkeypatch, capsys
    )
    (check,) = json.loads(stdout)["checks"]
    assert check["figures"]["verdict"] == "too busy" and code == 0, check
    assert "this machine was too busy to decide (15 of 20 rounds left out" in check["summary"]
    code, _, _ = run_cli(
        ["compare", str(run), "--min-throughput-ratio", "0.95", "--inconclusive", "fail"], monkeypatch, capsys
    )
    assert code == 1
    carried = _budget_run(tmp_path / "carried", busy_rounds=0)
    code, stdout, _ = run_cli(["compare", str(carried), "--min-throughput-ratio", "0.95"], monkeypatch, capsys)
    assert code == 1 and "limit ×0.95: fail" in stdout, stdout
