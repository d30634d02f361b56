"""`ragbench history`: exit 0 without a change past a limit, 1 when the newest run starts one, 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.harness.cli import run_cli
from tests.history.helpers import as_scores, base_scores, write_load_run, write_quality_run


@pytest.fixture
def history(monkeypatch, capsys):
    return lambda *args: run_cli(["history", *map(str, args)], monkeypatch, capsys)


def _load_history(folder, runs: int, slower_from: int | None = None, noise: float = 0.02) -> None:
    """`runs` load runs of one point, 30% slower from run `slower_from` on."""
    rng = np.random.default_rng(0)
    for run in range(runs):
        factor = 0.7 if slower_from is not None and run >= slower_from else 1.0
        value = 1000 * factor * (1 + noise * rng.standard_normal())
        write_load_run(folder / f"run{run:03d}", run, {8: value})


def test_no_change_passes_and_writes_every_output(tmp_path, history):
    _load_history(tmp_path / "runs", 20)
    code, out, err = history(tmp_path / "runs", "--min-throughput-ratio", "0.95", "--out", tmp_path / "out")
    assert code == 0, err
    assert "**PASS**" in out and "No change point in any series." in out
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"history.md", "history.json", "history_load.png"}
    document = json.loads((tmp_path / "out" / "history.json").read_text())
    assert document["verdict"] == "pass" and len(document["runs"]) == 20


def test_the_run_that_tips_a_slowdown_past_the_limit_fails_and_only_that_one(tmp_path, history):
    rng = np.random.default_rng(0)
    codes, documents = [], []
    for run in range(32):  # CI runs the history after each run
        value = 1000 * (0.7 if run >= 24 else 1.0) * (1 + 0.02 * rng.standard_normal())
        write_load_run(tmp_path / f"run{run:03d}", run, {8: value})
        code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95", "--format", "json")
        codes.append(code)
        documents.append(json.loads(out))
    assert codes.count(1) == 1 and set(codes) == {0, 1}
    tipped = codes.index(1)
    assert 24 < tipped <= 27  # found within 3 runs after it
    (failed,) = [s for s in documents[tipped]["series"] if s["breaches"]]
    assert failed["figure"] == "texts/s" and failed["newest_change"]["run"] == 24
    assert failed["newest_change"]["size"] == pytest.approx(0.7, abs=0.03)


def test_a_change_found_before_the_newest_run_or_within_the_limit_passes(tmp_path, history):
    _load_history(tmp_path / "runs", 40, slower_from=20)
    code, out, _ = history(tmp_path / "runs", "--min-throughput-ratio", "0.95")
    assert code == 0  # the runs after 20 already showed it: the run that tipped it failed, not this one
    assert "since the change at run 20" in out
    code, _, _ = history(tmp_path / "runs", "--min-throughput-ratio", "0.5")
    assert code == 0


def test_a_quality_drop_at_the_newest_run_past_max_drop_fails_and_names_the_measure(tmp_path, history):
    base = base_scores(300)
    hurt = np.random.default_rng(1).choice(300, size=60, replace=False)
    for run in range(9):
        scores = base.copy()
        if run >= 7:
            scores[hurt] -= 0.1  # 0.02 nDCG@10 on average
        write_quality_run(tmp_path / f"run{run}", run, as_scores(scores))
    code, out, _ = history(tmp_path / "run[0-7]", "--max-drop", "nDCG@10=0.01")
    assert code == 1, out  # the drop is on deterministic scores, paired by query: found at its own run
    assert "nDCG@10 dropped 0.0200 > --max-drop 0.01" in out
    assert history(tmp_path / "run[0-7]", "--max-drop", "nDCG@10=0.05")[0] == 0
    code, out, _ = history(tmp_path, "--max-drop", "nDCG@10=0.01")
    assert code == 0 and "run 2 of its segment, since the change at run 7" in out  # the next run: already said


@pytest.mark.parametrize(
    "args, message",
    [
        (["--by", "commit"], "--by 'commit': expected created or label:KEY"),
        (["--by", "label:commit"], "the run header has no 'commit' label"),
        (["--max-drop", "nDCG@x=0.1"], "measure 'nDCG@x': unknown"),
        (["--min-throughput-ratio", "fast"], "--min-throughput-ratio 'fast': expected a number"),
        (["--alpha", "2"], "--alpha '2': must be between 0 and 1"),
        (["--format", "html"], "--format 'html': expected one of md, json"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, history, args, message):
    _load_history(tmp_path / "runs", 3)
    code, out, err = history(tmp_path / "runs", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_a_bad_results_file_is_one_line_with_its_file_and_line(tmp_path, history):
    _load_history(tmp_path / "runs", 3)
    bad = tmp_path / "runs" / "run001" / "results.jsonl"
    lines = bad.read_text().splitlines()
    lines[1] = "{not json"
    bad.write_text("\n".join(lines) + "\n")
    code, _, err = history(tmp_path / "runs")
    assert code == 2 and err.count("\n") == 1
    assert f"{bad}:2: malformed JSON" in err
    code, _, err = history(tmp_path / "nowhere")
    assert code == 2 and "no such results file or folder" in err
