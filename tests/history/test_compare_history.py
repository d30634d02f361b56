"""`compare --history DIR` and `run SUITE --history DIR`: each load point's runs since its last change point are the
gate's calibration runs; the compared runs are left out of the history; too few runs gate without calibration."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from bench.core.errors import UserError
from bench.gate.config import GateConfig
from bench.gate.history_floor import history_gate
from tests.harness.cli import run_cli
from tests.history.helpers import write_load_run

GATE = ("--min-throughput-ratio", "0.9")


@pytest.fixture
def compare(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return lambda *args: run_cli(["compare", *map(str, args)], monkeypatch, capsys)


def aa_runs(folder, first: int, count: int, speed: float = 1000.0, noise: float = 0.02, seed: int = 0) -> list:
    """`count` A/A load runs of two points (batch 8 and 16) numbered from `first`, ±`noise` between runs."""
    rng = np.random.default_rng(seed)
    return [
        write_load_run(folder / f"run{run:03d}", run, {b: speed * (1 + noise * rng.standard_normal()) for b in (8, 16)})
        for run in range(first, first + count)
    ]


def floors(out: str) -> list[dict]:
    return [v["calibration"] for check in json.loads(out)["checks"] for v in check["figures"].get("noise", [])]


def test_the_history_calibrates_an_aa_pair_to_pass_and_a_slower_run_to_fail(tmp_path, compare):
    """Twelve A/A runs in the history folder, the newest two compared: they are left out of it, and the ten
    others calibrate both points (measured once a side, so judged by their floor alone)."""
    runs = aa_runs(tmp_path / "history", 0, 12)
    base, cur = runs[-2], runs[-1]
    code, out, err = compare(base, cur, *GATE, "--history", tmp_path / "history")
    assert code == 0, err
    assert "noise floor from 10 runs of the history since its first run (no change point in it)" in out
    assert "2 compared run(s) found in it, left out of it" in out
    assert "calibrated over 10 --history runs of 1 repeat" in out
    slower = write_load_run(tmp_path / "slower", 12, {8: 600.0, 16: 600.0})
    code, out, _ = compare(base, slower, *GATE, "--history", tmp_path / "history", "--format", "json")
    assert code == 1
    assert [f["runs"] for f in floors(out)] == [11, 11]  # the baseline left out, the current is not in it
    assert all(c["status"] == "fail" for c in json.loads(out)["checks"])


def test_only_the_runs_since_the_last_change_point_calibrate(tmp_path, compare):
    """A history that changed at run 10: the wild runs before it would make a floor no gate could pass; the
    gate learns it from the seven quiet runs since the change, and says so."""
    aa_runs(tmp_path / "history", 0, 10, speed=2000.0, noise=0.2, seed=1)
    aa_runs(tmp_path / "history", 10, 7, speed=1000.0, noise=0.01, seed=2)
    base, cur = aa_runs(tmp_path / "compared", 17, 2, speed=1000.0, noise=0.01, seed=3)
    code, out, err = compare(base, cur, *GATE, "--history", tmp_path / "history")
    assert code == 0, err
    assert "noise floor from 7 runs of the history since its last change point (run 2026-03-01T10:00:00+00:00)" in out
    code, out, _ = compare(base, cur, *GATE, "--history", tmp_path / "history", "--format", "json")
    found = floors(out)
    assert [f["runs"] for f in found] == [7, 7] and all(f["spread"] < 0.05 for f in found)


def test_too_few_runs_gate_without_calibration_and_say_so(tmp_path, compare):
    """One earlier run of the points (the detector cannot split a single newest run off a series either: a
    change needs runs after it to be found): no spread to learn, the gate is as without calibration."""
    aa_runs(tmp_path / "history", 0, 1)
    base, cur = aa_runs(tmp_path / "compared", 1, 2, seed=2)
    code, out, _ = compare(base, cur, *GATE, "--history", tmp_path / "history")
    assert (
        "too few runs since the last change point for load point(s) tei embed closed batch 8 conc 4 (1 run(s))" in out
    )
    assert "2 needed, so gated without the runner's noise between runs" in out
    assert "gated on one run against one run" in out and "noise floor from" not in out
    only_compared = tmp_path / "only"
    write_load_run(only_compared / "a", 0, {8: 1000.0})
    write_load_run(only_compared / "b", 1, {8: 1000.0})
    code, out, _ = compare(only_compared / "a", only_compared / "b", *GATE, "--history", only_compared)
    assert code == 0 and "no earlier run besides the compared ones: gated without calibration" in out


def test_a_point_the_history_never_measured_is_said_uncalibrated(tmp_path, compare):
    aa_runs(tmp_path / "history", 0, 6)
    base = write_load_run(tmp_path / "base", 6, {8: 1000.0, 32: 1000.0})
    cur = write_load_run(tmp_path / "cur", 7, {8: 1000.0, 32: 1000.0})
    code, out, _ = compare(base, cur, *GATE, "--history", tmp_path / "history")
    assert code == 0
    assert "noise floor from 6 runs of the history since its first run" in out
    assert "not measured in two runs of the --history since its last change point" in out


@pytest.mark.parametrize("case", ["missing", "empty", "with calibration"])
def test_a_bad_history_is_one_line_exit_2(tmp_path, compare, case):
    runs = aa_runs(tmp_path / "history", 0, 4)
    (tmp_path / "empty").mkdir()
    given = {"missing": tmp_path / "nope", "empty": tmp_path / "empty", "with calibration": tmp_path / "history"}
    extra = ("--calibration", runs[0], "--calibration", runs[1]) if case == "with calibration" else ()
    code, out, err = compare(runs[2], runs[3], *GATE, "--history", given[case], *extra)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "--history" in err or str(given[case]) in err


SUITE = """
[datasets.d]
path = "data"

[targets]
bm25 = "bm25"

[[quality]]
dataset = "d"
measures = ["P@2"]
depth = 5

[gate]
{gate}
"""


def _suite(tmp_path, gate: str):
    from tests.harness.beir import write_beir

    write_beir(tmp_path / "data", {"d1": "cats", "d2": "dogs"}, {"q1": "cats"}, [("q1", "d1", 1)])
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(gate=gate))
    return suite


def test_a_suite_reads_its_history_beside_it_and_refuses_it_with_calibration(tmp_path, monkeypatch, capsys):
    from bench.cli.suite import load_suite

    runs = aa_runs(tmp_path / "hist", 0, 3)
    assert load_suite(_suite(tmp_path, 'history = "hist"')).gate.history == str(tmp_path / "hist")
    suite = _suite(tmp_path, f'history = "hist"\ncalibration = ["{runs[0].parent}", "{runs[1].parent}"]')
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "gate.history" in err and "not both" in err, err


def test_run_with_a_bad_history_stops_before_any_job(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    base = write_load_run(tmp_path / "base" / "quality-d", 0, {8: 1000.0})
    suite = _suite(tmp_path, "")
    out = tmp_path / "out"
    args = ["run", str(suite), "--baseline", str(base.parent.parent), "--out", str(out)]
    code, _, err = run_cli([*args, "--history", str(tmp_path / "nope")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and not out.exists(), err


def test_run_history_is_refused_beside_the_suite_files_calibration():
    from bench.gate.calibration import Calibration

    with pytest.raises(UserError, match="not both"):
        history_gate(GateConfig(calibration=Calibration(runs=("aa-1", "aa-2"))), "ci-artifacts")
    assert history_gate(GateConfig(), "ci-artifacts").history == "ci-artifacts"


LOAD_SUITE = """
[gate]
min_throughput_ratio = 0.5
history = "ci"

[endpoints]
tei = "tei@${RAGBENCH_TEST_TEI}"

[[load]]
endpoints = ["tei"]
batch = [4]
concurrency = [2]
requests = 100  # a p99 needs 100 answers (bench/load/histograms.py MIN_SAMPLES)
warmup = "0.2s"
"""


@pytest.mark.slow  # four measured suite runs
def test_a_suite_run_learns_its_floor_from_its_ci_history(tmp_path, monkeypatch, capsys):
    """Three earlier suite runs kept as CI artifacts beside the suite file; the newest is the baseline (left out of
    the history), the two others calibrate the gate of the fourth run."""
    from tests.harness.process import free_port, start_process, stop_process, wait_healthy
    from tests.load.conftest import SERVER

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    port = free_port()
    server = start_process("load-fixture", [sys.executable, str(SERVER), "--port", str(port)], tmp_path / "f.log")
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}/metrics", deadline_s=30)
        monkeypatch.setenv("RAGBENCH_TEST_TEI", f"http://127.0.0.1:{port}")
        suite = tmp_path / "load.toml"
        suite.write_text(LOAD_SUITE)
        (tmp_path / "ci").mkdir()
        for run in range(3):
            code, out, err = run_cli(
                ["run", str(suite), "--out", str(tmp_path / "ci" / f"run{run}")], monkeypatch, capsys
            )
            assert code == 0, out + err
        args = ["run", str(suite), "--baseline", str(tmp_path / "ci" / "run2"), "--out", str(tmp_path / "cur")]
        code, out, err = run_cli(args, monkeypatch, capsys)
    finally:
        stop_process(server)
    assert code == 0, out + err
    assert f"--history {tmp_path / 'ci'}: 1 compared run(s) found in it, left out of it" in out
    assert "noise floor from 2 runs of the history since its first run (no change point in it)" in out


def test_copies_of_one_run_count_once_and_say_so(tmp_path, compare):
    (one,) = aa_runs(tmp_path / "one", 0, 1)
    for copy in range(4):
        (tmp_path / "history" / f"copy{copy}").mkdir(parents=True)
        (tmp_path / "history" / f"copy{copy}" / "results.jsonl").write_bytes(one.read_bytes())
    base, cur = aa_runs(tmp_path / "compared", 1, 2, seed=2)
    code, out, _ = compare(base, cur, *GATE, "--history", tmp_path / "history")
    assert code == 0
    assert "3 copy(ies) of runs already in it left out: each run counts once" in out
    assert "noise floor from" not in out and "(1 run(s))" in out  # one run: no spread, never ±0.0%


def test_only_runs_older_than_the_current_one_calibrate_and_the_newer_are_said(tmp_path, compare):
    aa_runs(tmp_path / "history", 0, 10, noise=0.01)
    base, cur = aa_runs(tmp_path / "history", 10, 2, noise=0.01, seed=1)
    aa_runs(tmp_path / "history", 12, 3, speed=600.0, noise=0.01, seed=2)  # slower runs after the current one
    code, out, _ = compare(base, cur, *GATE, "--history", tmp_path / "history", "--format", "json")
    assert code == 0
    assert "3 run(s) not older than the current run (created 2026-03-01T11:00:00+00:00) left out" in out
    assert [f["runs"] for f in floors(out)] == [10, 10] and all(f["spread"] < 0.05 for f in floors(out))


def test_a_run_compared_with_itself_is_refused(tmp_path, compare):
    base, _ = aa_runs(tmp_path / "runs", 0, 2)
    for current in (base, base.parent):
        code, out, err = compare(base, current, *GATE)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "are the same results" in err and "a run compared with itself passes whatever it measured" in err


def test_calibration_given_two_runs_after_one_flag_says_to_repeat_the_flag(tmp_path, compare):
    base, cur, a, b = aa_runs(tmp_path / "runs", 0, 4)
    code, _, err = compare(base, cur, *GATE, "--calibration", a, b)
    assert code == 2 and err.count("\n") == 1
    assert "repeat it for more (--calibration A --calibration B)" in err


def test_one_check_is_one_check(tmp_path, compare):
    base = write_load_run(tmp_path / "a", 0, {8: 1000.0})
    cur = write_load_run(tmp_path / "b", 1, {8: 1000.0})
    code, out, _ = compare(base, cur, *GATE)
    assert code == 0 and out.startswith("ragbench compare: pass (1 check, none regressed")
