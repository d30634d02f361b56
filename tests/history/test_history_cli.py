"""`ragbench history`: exit 0 without a change past a limit, 1 when the newest run starts one, 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.harness.cli import run_cli
from tests.history.helpers import as_scores, base_scores, created, write_load_run, write_quality_run


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


def test_a_slowdown_fails_its_first_run_out_of_line_and_the_run_that_tips_the_change_point_then_passes(
    tmp_path, history
):
    rng = np.random.default_rng(0)
    codes, documents = [], []
    for run in range(32):  # CI runs the history after each run
        value = 1000 * (0.7 if run >= 24 else 1.0) * (1 + 0.02 * rng.standard_normal())
        write_load_run(tmp_path / f"run{run:03d}", run, {8: value})
        code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95", "--format", "json")
        codes.append(code)
        documents.append(json.loads(out))
    assert codes[:24] == [0] * 24 and codes[24] == 1  # the first slow run: out of line at once
    (first,) = [s for s in documents[24]["series"] if s["breaches"]]
    assert first["out_of_line"]["past_bound"] and first["newest_change"] is None
    assert "out of line (1 run: a change or an outlier" in first["breaches"][0]
    tipped = codes.index(1, 25)
    assert tipped <= 27 and set(codes[tipped + 1 :]) == {0}  # the change point found within 3 runs after it
    (failed,) = [s for s in documents[tipped]["series"] if s["breaches"]]
    assert failed["figure"] == "texts/s" and failed["newest_change"]["run"] == 24
    assert failed["newest_change"]["size"] == pytest.approx(0.7, abs=0.03)


def _flat_then(folder, newest: float, runs: int = 12, p99_ms: float = 20.0, noise: float = 0.02) -> None:
    """`runs` unchanged load runs then one whose texts/s is `newest` times theirs (its p99 `p99_ms`)."""
    rng = np.random.default_rng(3)
    for run in range(runs + 1):
        factor = newest if run == runs else 1.0
        value = 1000 * factor * (1 + noise * rng.standard_normal())
        write_load_run(folder / f"run{run:03d}", run, {8: value}, p99_ms=p99_ms if run == runs else 20.0)


def test_twelve_flat_runs_then_one_30_percent_slower_fails_at_that_run(tmp_path, history):
    _flat_then(tmp_path, 0.7)
    code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95")
    assert code == 1 and "**FAIL**" in out
    assert "out of line (1 run: a change or an outlier; a change point once 3 runs confirm it)" in out
    assert "of the 12 runs since the last change point" in out
    assert history(tmp_path, "--min-throughput-ratio", "0.6")[0] == 0  # out of line, within the limit


def test_out_of_line_is_one_sided_and_gates_p99_upwards(tmp_path, history):
    _flat_then(tmp_path / "faster", 1.3)
    assert history(tmp_path / "faster", "--min-throughput-ratio", "0.95")[0] == 0  # an improvement passes
    _flat_then(tmp_path / "slower_p99", 1.0, p99_ms=30.0)
    code, out, _ = history(tmp_path / "slower_p99", "--max-p99-ratio", "1.1")
    assert code == 1 and "p99 ms ×1.500 > --max-p99-ratio 1.1: out of line" in out


def test_too_few_runs_before_the_newest_are_not_a_bound_and_are_said(tmp_path, history):
    _flat_then(tmp_path, 0.7, runs=5)
    code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95")
    assert code == 0 and "1 gated series whose newest run was not tested against the runs before it" in out


def test_a_change_found_before_the_newest_run_or_within_the_limit_passes(tmp_path, history):
    _load_history(tmp_path / "runs", 40, slower_from=20)
    code, out, _ = history(tmp_path / "runs", "--min-throughput-ratio", "0.95")
    assert code == 0  # the runs after 20 already showed it: the run that tipped it failed, not this one
    assert f"since the change at run {created(20)}" in out
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
    assert (
        code == 0 and f"run 2 of its segment, since the change at run {created(7)}" in out
    )  # the next run: already said


@pytest.mark.parametrize(
    "args, message",
    [
        (["--by", "commit"], "--by 'commit': expected created or label:KEY"),
        (["--by", "label:commit"], "the run header has no 'commit' label"),
        (["--max-drop", "nDCG@x=0.1"], "measure 'nDCG@x': unknown"),
        (["--min-throughput-ratio", "fast"], "--min-throughput-ratio 'fast': expected a number"),
        (["--alpha", "2"], "--alpha '2': must be between 0 and 1"),
        (["--min-throughput-ratio", "2"], "--min-throughput-ratio '2': must be above 0 and at most 1"),
        (["--max-p99-ratio", "0.9"], "--max-p99-ratio '0.9': must be 1 or more"),
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


@pytest.mark.parametrize("bad", [float("nan"), -5.0, 0.0])
def test_a_figure_that_is_no_figure_fails_the_newest_run_and_is_said_in_an_earlier_one(tmp_path, history, bad):
    _flat_then(tmp_path, 1.0)
    write_load_run(tmp_path / "run013", 13, {8: bad})
    code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95")
    assert code == 1 and f"texts/s of the newest run is {bad:g}: not a figure to gate" in out
    write_load_run(tmp_path / "run014", 14, {8: 1000.0})
    code, out, _ = history(tmp_path, "--min-throughput-ratio", "0.95")
    assert code == 0 and f"texts/s is {bad:g}, not a figure: left out of its series" in out


def test_repeats_too_short_for_their_own_p99_are_gated_on_the_pooled_p99(tmp_path, history):
    from dataclasses import replace

    from bench.results.schema import EndRecord, PointRepeat, RunHeader
    from bench.results.writer import ResultsWriter
    from tests.gate.helpers import load_point

    for run in range(13):
        point = load_point(texts_per_s=1000.0, p99_ms=30.0 if run == 12 else 20.0)
        short = replace(point.latency_ms.service, p99=None, count=60)  # 60 requests: no p99 of their own
        repeat = PointRepeat(
            point.duration_s, point.requests, point.throughput, replace(point.latency_ms, service=short)
        )
        writer = ResultsWriter(tmp_path / f"run{run:02d}" / "results.jsonl")
        header = RunHeader(command="load", created=created(run), ragbench_version="t", dataset={"name": "load"})
        writer.write(header, replace(point, repeats=[repeat, repeat]), EndRecord(status="complete", finished="x"))
        writer.close()
    code, out, _ = history(tmp_path, "--max-p99-ratio", "1.1")
    assert code == 1 and "p99 ms ×1.500 > --max-p99-ratio 1.1" in out


def test_out_that_is_a_file_is_one_line_before_anything_is_printed(tmp_path, history):
    _load_history(tmp_path / "runs", 3)
    results = tmp_path / "runs" / "run000" / "results.jsonl"
    for out in (results, results / "inside"):
        code, out_text, err = history(tmp_path / "runs", "--out", out)
        assert code == 2 and out_text == "" and err.count("\n") == 1
        assert f"{results} is a file, not a folder" in err


def test_out_never_replaces_a_users_files_and_replaces_its_own_only_with_overwrite(tmp_path, history):
    _load_history(tmp_path / "runs", 3)
    out = tmp_path / "out"
    out.mkdir()
    mine = {"history.md": "my notes\n", "history_load.png": "my picture", "keep.txt": "mine"}
    for name, text in mine.items():
        (out / name).write_text(text)
    for extra in ([], ["--overwrite"]):
        code, printed, err = history(tmp_path / "runs", "--out", out, *extra)
        assert code == 2 and printed == "" and err.count("\n") == 1
        assert "history.md" in err and ("give --overwrite" in err if not extra else "not a file ragbench wrote" in err)
    assert {p.name: p.read_text() for p in out.iterdir()} == mine
    (out / "history.md").unlink()
    (out / "history_load.png").unlink()
    assert history(tmp_path / "runs", "--out", out)[0] == 0
    code, _, err = history(tmp_path / "runs", "--out", out)
    assert code == 2 and "holds history.md; give --overwrite to replace it" in err
    assert history(tmp_path / "runs", "--out", out, "--overwrite")[0] == 0
    assert {p.name for p in out.iterdir()} == {"history.md", "history.json", "history_load.png", "keep.txt"}


def _restamp(path, created: str | None = None, labels: dict | None = None) -> None:
    """Rewrite a results file's header: its `created` stamp, its labels."""
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header.update({"created": created} if created else {}, **({"labels": labels} if labels else {}))
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")


def test_runs_are_ordered_by_the_instant_of_their_stamp_not_its_text(tmp_path, history):
    early = write_load_run(tmp_path / "a", 0, {8: 1000.0})
    late = write_load_run(tmp_path / "b", 1, {8: 900.0})
    _restamp(early, created="2026-03-01T09:00:00-05:00")  # 14:00 UTC: later than b, though its text sorts first
    _restamp(late, created="2026-03-01T12:00:00+00:00")
    code, out, _ = history(tmp_path, "--format", "json")
    assert code == 0
    assert [r["path"] for r in json.loads(out)["runs"]] == [str(late), str(early)]


def test_labels_nan_or_inf_among_numbered_runs_are_refused_naming_the_run(tmp_path, history):
    """Issue 50: 9, 10, inf, nan were ordered as first measured (nan, inf, 10, 9: the newest run taken as 9)."""
    for run, label in enumerate(["nan", "inf", "10", "9"]):
        _restamp(write_load_run(tmp_path / f"r{run}", run, {8: 1000.0}), labels={"build": label})
    code, _, err = history(tmp_path, "--by", "label:build", "--format", "json")
    assert code == 2 and "'nan' is not a finite number, and other runs are numbered (9, 10)" in err, err
    assert str(tmp_path / "r0") in err


def test_numbered_labels_are_ordered_as_numbers_whatever_order_they_were_measured_in(tmp_path, history):
    for run, label in enumerate(["10", "9", "11", "2"]):
        _restamp(write_load_run(tmp_path / f"r{run}", run, {8: 1000.0}), labels={"build": label})
    code, out, _ = history(tmp_path, "--by", "label:build", "--format", "json")
    assert code == 0
    assert [r["labels"]["build"] for r in json.loads(out)["runs"]] == ["2", "9", "10", "11"]


def test_a_job_page_keeps_its_bottom_rows_run_numbers_and_names_runs_by_their_run_label(tmp_path):
    from bench.commands.history import HistoryRequest, history_report
    from bench.report.history import job_figure

    _load_history(tmp_path, 12, slower_from=6, noise=0.005)
    for run in range(12):
        _restamp(tmp_path / f"run{run:03d}" / "results.jsonl", labels={"run": f"r{run}"})
    report = history_report(HistoryRequest(runs=[str(tmp_path)]))
    assert [r.name for r in report.history.runs] == [f"r{run}" for run in range(12)]
    figure = job_figure(report, "load")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    ticks = [t for ax in figure.axes if ax.get_visible() for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and all(t.get_window_extent(renderer).y0 >= 0 for t in ticks)
    # issue 50: the x axis said the runs' indexes (0, 5, 10), not their `run=` labels
    assert {t.get_text() for t in ticks} <= {f"r{run}" for run in range(12)}, {t.get_text() for t in ticks}


def test_a_gated_figure_no_run_could_measure_is_said(tmp_path, history):
    from dataclasses import replace

    from bench.results.schema import EndRecord, RunHeader
    from bench.results.writer import ResultsWriter
    from tests.gate.helpers import load_point

    for run in range(3):
        point = load_point(texts_per_s=1000.0)
        short = replace(point.latency_ms.service, p99=None, count=60)  # 60 requests: no p99
        writer = ResultsWriter(tmp_path / f"run{run:02d}" / "results.jsonl")
        header = RunHeader(command="load", created=created(run), ragbench_version="t", dataset={"name": "load"})
        writer.write(
            header,
            replace(point, latency_ms=replace(point.latency_ms, service=short)),
            EndRecord(status="complete", finished="x"),
        )
        writer.close()
    code, out, _ = history(tmp_path, "--max-p99-ratio", "1.1")
    assert code == 0 and "load tei embed closed batch 8 conc 4 p99 ms: no figure in 3 run(s)" in out


def test_max_p99_increase_gates_as_the_older_max_p99_ratio_does(tmp_path, history):
    _flat_then(tmp_path, 1.0, p99_ms=30.0)
    assert history(tmp_path, "--max-p99-increase", "10%")[0] == 1
    assert history(tmp_path, "--max-p99-increase", "0.6")[0] == 0  # ×1.5 is within 60%
    code, _, err = history(tmp_path, "--max-p99-increase", "10%", "--max-p99-ratio", "1.1")
    assert code == 2 and "not both" in err
