"""`compare RUN`: an interleaved run gated on its own paired rounds, by compare's limits, with no baseline file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.gate import paired
from bench.results.schema import InterleavedRecord, InterleavedRound
from tests.gate.helpers import load_point, write_load_results
from tests.harness.cli import run_cli


def interleaved_run(folder: Path, step: float, noise: float = 0.01, seed: int = 0, rounds: int = 10) -> Path:
    """A run whose machine slows by 30% over the rounds (both sides) and whose B is `step` times A's texts/s
    (its latency 1/step times A's); the record's own verdict is left 'not gated': compare judges afresh."""
    rng = np.random.default_rng(seed)
    drift = np.linspace(1.0, 0.7, rounds)
    a = 1000 * drift * np.exp(rng.normal(0, noise, rounds))
    b = 1000 * step * drift * np.exp(rng.normal(0, noise, rounds))
    made = [
        InterleavedRound(i + 1, "ab"[i % 2], x, y, 8000 / x, 8000 / y, 16000 / x, 16000 / y, y / x, x / y, x / y)
        for i, (x, y) in enumerate(zip(a, b, strict=True))
    ]
    figures, _ = paired.judged_figures(made, {})
    record = InterleavedRecord("a", "b", "closed batch 8 conc 4", "service", made, figures, paired.NOT_GATED)
    folder.mkdir()
    points = [load_point("a", texts_per_s=float(a.mean())), load_point("b", texts_per_s=float(b.mean()))]
    return write_load_results(folder, [*points, record])


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
