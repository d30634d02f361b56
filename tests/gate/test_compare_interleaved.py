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
    from bench.results.schema.load import InterleavedVerdict

    rng = np.random.default_rng(3)
    made = []
    for i in range(rounds):
        x, y = 1000.0, 930.0 * float(np.exp(rng.normal(0, 0.02)))
        made.append(InterleavedRound(i + 1, "ab"[i % 2], x, y, None, None, None, None, y / x, None, None))
        if i >= rounds - busy_rounds:
            made[-1].too_busy, made[-1].current_loop_lag_p99_ms = "this machine was too busy: ...", 80.0
    figures, _ = paired.judged_figures(made, {}, anytime=True)
    record = InterleavedRecord(
        "a", "b", "closed batch 8 conc 4", "service", made, figures, InterleavedVerdict.NOT_GATED
    )
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


def _tampered(path, change) -> None:
    """The results file with its interleaved record's JSON changed by `change` (a hand-edited or cut file)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        data = json.loads(line)
        if data.get("record") == "interleaved":
            change(data)
            lines[i] = json.dumps(data)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _set_round(field: str, value: object):
    def change(data: dict) -> None:
        data["rounds"][2][field] = value

    return change


def _keep_rounds(n: int):
    def change(data: dict) -> None:
        data["rounds"] = data["rounds"][:n]

    return change


@pytest.mark.parametrize(
    "change,why",
    [
        (_keep_rounds(1), "1 round(s) measured on both sides; a paired ratio needs 2"),
        (_keep_rounds(0), "0 round(s) measured on both sides"),
        (_set_round("current_texts_per_s", -5.0), "round 3: B's texts/s is -5.0"),
        (_set_round("baseline_texts_per_s", None), "round 3: A's texts/s is nan"),
        (_set_round("current_p99_ms", float("inf")), "round 3: B's p99 is inf"),
        (_set_round("texts_per_s_ratio", -1.0), "round 3: the ratio of texts/s is -1.0"),
        (_set_round("texts_per_s_ratio", 7.5), "round 3: the texts/s ratio 7.5 is not B ÷ A"),
        (_set_round("p99_ratio", None), "round 3: the p99 ratio None is not B ÷ A"),  # NaN is written null
    ],
)
def test_a_record_that_cannot_be_judged_fails_said_so_never_a_pass_of_0_checks(
    change, why, tmp_path, monkeypatch, capsys
):
    """Issue 50: an interleaved record with a NaN, inf or negative figure or 0-1 rounds said 'pass (0 checks)' and
    'no --min-throughput-ratio' though one was given."""
    run = interleaved_run(tmp_path / "run", 1.0)
    _tampered(run, change)
    code, stdout, _ = run_cli(["compare", str(run), "--min-throughput-ratio", "0.95"], monkeypatch, capsys)
    assert code == 1 and f"CANNOT JUDGE: {why}" in stdout, stdout
    assert "no --min-throughput-ratio" not in stdout


def test_a_gated_figure_no_round_pair_measured_is_cannot_judge_not_a_pass_on_the_others():
    """--max-p99-increase given, no window with a p99 (too few answers on both sides): the texts/s pass alone was
    the verdict; now `cannot judge` (p99 not judged), and a failed figure still fails."""
    from bench.gate.interleaved import judge_rounds
    from bench.results.schema import InterleavedRound
    from bench.results.schema.load import InterleavedVerdict

    rounds = [
        InterleavedRound(i + 1, "a", 1000.0, 1000.0 * f, 5.0, 5.0, None, None, f, 1.0, None)
        for i, f in enumerate([1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    ]
    both = {"texts_per_s": 0.9, "p50": None, "p99": 1.1}
    judged = judge_rounds(rounds, both, sequential=False)
    assert judged.verdict == InterleavedVerdict.CANNOT_JUDGE and judged.why and "p99 not judged" in judged.why
    assert judge_rounds(rounds, {**both, "p99": None}, sequential=False).verdict == InterleavedVerdict.PASS
    assert judge_rounds(rounds, {**both, "texts_per_s": 1.5}, sequential=False).verdict == InterleavedVerdict.FAIL


def test_a_record_written_before_the_verdict_was_an_enum_still_reads():
    """A results line as `load --interleave` wrote it before issue 50 (the verdict a plain string)."""
    from pathlib import Path

    from bench.results.schema.load import InterleavedVerdict, PairedFigureName
    from bench.results.store import read_results

    old = Path(__file__).parent / "data" / "interleaved_before_enum.jsonl"
    (record,) = read_results(old).interleaved
    assert record.verdict is InterleavedVerdict.INCONCLUSIVE and len(record.rounds) == 3
    assert [f.figure for f in record.figures] == list(PairedFigureName)  # strings then, the enum's members now
    assert record.figures[0].verdict is InterleavedVerdict.INCONCLUSIVE


def test_a_run_killed_after_3_of_8_rounds_is_judged_on_the_rounds_it_wrote(tmp_path, monkeypatch, capsys):
    """Issue 50: SIGKILL after 3 of 8 rounds kept only the header (the records were written once a point's rounds
    ended); now each round is written as it ends, and `compare RUN` judges what a killed run wrote, said so."""
    from bench.results.schema import InterleavedRound, InterleavedRoundRecord, RunHeader
    from bench.results.writer import ResultsWriter

    writer = ResultsWriter(tmp_path / "results.jsonl")
    header = RunHeader(
        command="load",
        created="2026-12-07T19:00:00+00:00",
        ragbench_version="t",
        dataset={"name": "load"},
        load={"interleave": True, "rounds": 8, "endpoints": {"a": {}, "b": {}}},
    )
    writer.write(header)
    for i, (x, y) in enumerate([(1000.0, 800.0), (990.0, 795.0), (1010.0, 805.0)]):
        made = InterleavedRound(i + 1, "ab"[i % 2], x, y, 8.0, 10.0, None, None, y / x, 10.0 / 8.0, None)
        writer.write(InterleavedRoundRecord("a", "b", "closed batch 8 conc 4", "service", made))
    writer.close()  # no end record: the run was killed
    code, stdout, _ = run_cli(["compare", str(tmp_path), "--min-throughput-ratio", "0.95"], monkeypatch, capsys)
    assert code == 1 and "3 rounds paired" in stdout and "limit ×0.95: fail" in stdout, stdout
    assert "the run stopped after 3 round(s) with no end record (killed): judged on the rounds it wrote" in stdout
    from bench.load.interleave import missing_pairs
    from bench.results.store import read_results

    (line,) = missing_pairs(read_results(tmp_path / "results.jsonl"))  # the report's and the console's line
    assert "the run stopped after 3 round(s) with no end record (killed); `ragbench compare RUN` judges" in line


def test_a_run_stopped_by_a_signal_is_said_stopped_beside_its_verdict(tmp_path, monkeypatch, capsys):
    """Issue 50's hostile pass: SIGTERM after 4 of 8 rounds wrote its paired record and an `interrupted` end;
    `compare RUN` judged the 4 rounds and never said the run was stopped (a two-run compare says so)."""
    path = interleaved_run(tmp_path / "cut", 1.0, rounds=4)
    lines = path.read_text().splitlines()
    end = json.loads(lines[-1])
    assert end["record"] == "end"
    lines[-1] = json.dumps({**end, "status": "interrupted", "error": "interrupted (SIGTERM)"})
    path.write_text("\n".join(lines) + "\n")
    code, stdout, _ = run_cli(["compare", str(tmp_path / "cut")], monkeypatch, capsys)
    assert code == 0 and "4 rounds paired" in stdout, stdout
    assert "the run is interrupted: judged on the rounds it finished" in stdout, stdout
