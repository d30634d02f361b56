"""Everything is checked before --out is touched, and two runs never mix in one folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.results.store import read_results
from tests.harness.cli import run_cli


def quality(tiny: Path, out: Path, *args: str) -> list[str]:
    return ["quality", "--dataset", str(tiny), "--out", str(out), "-m", "P@2", "--depth", "5", *args]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def earlier(tiny, tmp_path, monkeypatch, capsys) -> Path:
    """A folder holding a finished run of two targets, plus a file of the user's. Both bm25 (no model to load:
    what is checked is the folder, not the kind of target)."""
    out = tmp_path / "out"
    code, _, err = run_cli(quality(tiny, out, "-t", "bm25", "-t", "bm25_k1=bm25?k1=0.9"), monkeypatch, capsys)
    assert code == 0, err
    (out / "notes.txt").write_text("mine")
    (out / "runs" / "by-hand.trec").write_text("q0 Q0 d0 1 1.0 mine\n")
    return out


@pytest.mark.parametrize(
    "bad",
    [
        ["-t", "bm25", "-t", "bm25:typo"],
        ["-t", "bm25", "-t", "dense?colour=red"],
        ["-t", "bm25", "-m", "nosuch@3"],
        ["-t", "bm25", "--depth", "1"],
        ["-t", "bm25+rerank"],
    ],
)
def test_a_bad_option_is_found_before_the_output_folder_is_touched(tiny, earlier, monkeypatch, capsys, bad):
    before = snapshot(earlier)
    code, _out, err = run_cli(quality(tiny, earlier, "--overwrite", *bad), monkeypatch, capsys)
    assert code == 2 and err.startswith("ragbench: error: ") and err.count("\n") == 1, err
    assert snapshot(earlier) == before


def test_a_folder_with_an_earlier_run_is_refused_without_overwrite(tiny, earlier, monkeypatch, capsys):
    before = snapshot(earlier)
    code, _, err = run_cli(quality(tiny, earlier, "-t", "bm25"), monkeypatch, capsys)
    assert code == 2 and "holds an earlier run" in err and "--overwrite" in err and err.count("\n") == 1
    assert snapshot(earlier) == before


def test_overwrite_replaces_only_ragbench_files(tiny, earlier, monkeypatch, capsys):
    code, _, err = run_cli(quality(tiny, earlier, "-t", "bm25", "--overwrite"), monkeypatch, capsys)
    assert code == 0, err
    assert sorted(p.name for p in (earlier / "runs").iterdir()) == [
        "bm25.trec",
        "by-hand.trec",
    ]  # the old second target's run is gone
    assert (earlier / "notes.txt").read_text() == "mine" and (earlier / "runs" / "by-hand.trec").exists()
    assert [t.name for t in read_results(earlier / "results.jsonl").targets] == ["bm25"]
    assert "bm25_k1" not in (earlier / "report.md").read_text()


def test_a_folder_of_foreign_files_is_used_and_they_stay(tiny, tmp_path, monkeypatch, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = run_cli(quality(tiny, out, "-t", "bm25"), monkeypatch, capsys)
    assert code == 0, err
    assert (out / "notes.txt").read_text() == "mine" and (out / "report.html").exists()


def test_out_pointing_at_a_file_is_one_line(tiny, tmp_path, monkeypatch, capsys):
    target = tmp_path / "file.txt"
    target.write_text("keep")
    code, _, err = run_cli(quality(tiny, target, "-t", "bm25"), monkeypatch, capsys)
    assert code == 2 and err == f"ragbench: error: --out {target}: is a file, not a folder\n"
    assert target.read_text() == "keep"


def test_report_out_never_replaces_report_files_it_did_not_write_there(tiny, earlier, tmp_path, monkeypatch, capsys):
    """`report --out DIR`: DIR's own report files (a user's, or another run's beside its results) stay unless
    --overwrite; beside its own results a report is rebuilt as always."""
    mine = tmp_path / "mine"
    (mine / "plots").mkdir(parents=True)
    (mine / "report.html").write_text("my page")
    (mine / "plots" / "metrics.png").write_bytes(b"my plot")
    before = snapshot(mine)
    code, _stdout, stderr = run_cli(["report", str(earlier / "results.jsonl"), "--out", str(mine)], monkeypatch, capsys)
    assert code == 2 and "--overwrite" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert snapshot(mine) == before and not list(mine.glob(".report-*"))
    code, _, stderr = run_cli(
        ["report", str(earlier / "results.jsonl"), "--out", str(mine), "--overwrite"], monkeypatch, capsys
    )
    assert code == 0 and (mine / "report.html").read_text() != "my page", stderr
    code, _, stderr = run_cli(["report", str(earlier / "results.jsonl"), "--out", str(earlier)], monkeypatch, capsys)
    assert code == 0, stderr  # its own folder: rebuilt
