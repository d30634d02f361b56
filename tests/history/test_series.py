"""Series read from results files written by the project's own writer: grouped by configuration, in run order."""

from __future__ import annotations

import pytest

from bench.core.errors import InputError, UserError
from bench.history.runs import order_runs, read_runs
from bench.history.series import Gate, read_history
from tests.history.helpers import as_scores, base_scores, write_load_run, write_quality_run


def test_load_points_and_quality_figures_each_make_one_series_in_created_order(tmp_path):
    for run in (2, 0, 1):  # written out of order: the header's stamp orders them
        write_load_run(tmp_path / f"run{run}" / "load", run, {1: 100.0 + run, 8: 800.0 + run})
        write_quality_run(tmp_path / f"run{run}" / "quality", run, as_scores(base_scores(5)))
    history = read_history([str(tmp_path)])
    assert [r.created for r in history.runs] == sorted(r.created for r in history.runs)
    names = {s.name for s in history.series}
    assert "load tei embed closed batch 8 conc 4 texts/s" in names
    assert "load tei embed closed batch 1 conc 4 p99 ms" in names
    tput = next(s for s in history.series if s.name == "load tei embed closed batch 1 conc 4 texts/s")
    assert tput.gate == Gate.THROUGHPUT and [o.value for o in tput.observations] == [100.0, 101.0, 102.0]
    quality = [s for s in history.series if s.job == "quality"]
    assert {s.figure for s in quality} == {"nDCG@10", "ingest texts/s", "query p99 ms"}
    ndcg = next(s for s in quality if s.gate == Gate.QUALITY)
    assert ndcg.measure == "ndcg_cut_10" and len(ndcg.qids) == 5 and len(ndcg.observations) == 3
    assert all(len(o.samples) == 5 for o in ndcg.observations)


def test_another_dataset_or_point_is_another_series(tmp_path):
    write_quality_run(tmp_path / "a", 0, as_scores(base_scores(5)), fingerprint="f1")
    write_quality_run(tmp_path / "b", 1, as_scores(base_scores(5)), fingerprint="f2")
    write_load_run(tmp_path / "c", 2, {1: 100.0})
    write_load_run(tmp_path / "d", 3, {2: 100.0})
    history = read_history([str(tmp_path / "*")])
    assert len([s for s in history.series if s.gate == Gate.QUALITY]) == 2
    assert len([s for s in history.series if s.gate == Gate.THROUGHPUT]) == 2
    assert all(len(s.observations) == 1 for s in history.series)


def test_quality_scores_are_paired_on_the_queries_every_run_scored(tmp_path):
    write_quality_run(tmp_path / "a", 0, {"q1": 0.5, "q2": 0.7, "q3": 0.1})
    write_quality_run(tmp_path / "b", 1, {"q2": 0.6, "q3": 0.2})
    (ndcg,) = [s for s in read_history([str(tmp_path)]).series if s.gate == Gate.QUALITY]
    assert ndcg.qids == ("q2", "q3")
    assert [o.samples for o in ndcg.observations] == [(0.7, 0.1), (0.6, 0.2)]


def test_an_interrupted_run_is_left_out_and_said(tmp_path):
    write_load_run(tmp_path / "a", 0, {1: 100.0})
    write_quality_run(tmp_path / "b", 1, as_scores(base_scores(5)), status="")
    history = read_history([str(tmp_path)])
    assert len(history.runs) == 1
    assert any("did not complete" in note for note in history.notes)


def test_runs_are_ordered_by_a_label_numbers_as_numbers_and_commits_by_their_first_run(tmp_path):
    for run in range(4):
        write_load_run(tmp_path / f"r{run}", run, {1: 100.0})
    runs, _ = read_runs([str(tmp_path)])
    for results, build, commit in zip(runs, ["10", "9", "11", "2"], ["b", "a", "b", "c"]):
        results.header.labels = {"build": build, "commit": commit}  # what the run header holds once runs carry labels
    assert [r.labels["build"] for r, _ in order_runs(runs, "build")] == ["2", "9", "10", "11"]
    by_commit = order_runs(runs, "commit")
    assert [r.labels["commit"] for r, _ in by_commit] == ["b", "b", "a", "c"]
    assert [r.name for r, _ in by_commit] == ["b", "b", "a", "c"]


def test_a_missing_label_or_file_is_one_input_error(tmp_path):
    path = write_load_run(tmp_path / "a", 0, {1: 100.0})
    runs, _ = read_runs([str(path)])
    with pytest.raises(InputError, match="has no 'commit' label"):
        order_runs(runs, "commit")
    with pytest.raises(InputError, match="no file or folder matches"):
        read_runs([str(tmp_path / "nothing*")])
    with pytest.raises(UserError, match="no complete run"):
        write_quality_run(tmp_path / "cut", 0, as_scores(base_scores(5)), status="")
        read_runs([str(tmp_path / "cut")])
