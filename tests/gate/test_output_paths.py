"""compare's and run's outputs (--junit, --benchmark-json, --summary) never overwrite or append to a file the
command reads, one another, or a folder a suite writes its results into: refused before anything is
compared or run, one line, exit 2, every input byte for byte as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.helpers import noisy_scores, write_results, write_suite

OUTPUTS = ["--junit", "--benchmark-json", "--summary"]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    scores = {"prod": {"ndcg_cut_10": noisy_scores(40, 1)}}
    return write_results(tmp_path / "base", scores), write_results(tmp_path / "cur", scores)


def snapshot(*paths: Path) -> list[bytes]:
    return [p.read_bytes() for p in paths]


def refused(code: int, out: str, err: str, *words: str) -> None:
    assert (code, out) == (2, ""), (code, out, err)
    assert err.startswith("ragbench: error: ") and err.count("\n") == 1 and all(w in err for w in words), err


@pytest.mark.parametrize("flag", OUTPUTS)
@pytest.mark.parametrize("which", ["baseline", "current"])
@pytest.mark.parametrize("given_as", ["folder", "file"])
def test_an_output_naming_an_input_results_file_is_refused(runs, tmp_path, ragbench, flag, which, given_as):
    base, cur = runs
    before = snapshot(base, cur)
    inputs = (base.parent, cur.parent) if given_as == "folder" else (base, cur)
    target = base if which == "baseline" else cur
    refused(*ragbench("compare", *map(str, inputs), flag, str(target)), flag, "is an input")
    assert snapshot(base, cur) == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_link_to_an_input_is_the_input(runs, tmp_path, ragbench, link):
    base, cur = runs
    before = snapshot(base, cur)
    alias = tmp_path / "report.xml"
    alias.symlink_to(cur) if link == "symlink" else alias.hardlink_to(cur)
    refused(*ragbench("compare", str(base), str(cur), "--junit", str(alias)), "is an input")
    assert snapshot(base, cur) == before


def test_the_step_summary_from_the_environment_is_checked_too(runs, ragbench, monkeypatch):
    base, cur = runs
    before = snapshot(base, cur)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(base))
    refused(*ragbench("compare", str(base), str(cur)), "--summary", "is an input")
    assert snapshot(base, cur) == before


def test_two_outputs_naming_one_file_are_refused(runs, tmp_path, ragbench):
    base, cur = runs
    both = tmp_path / "gate.out"
    refused(
        *ragbench("compare", str(base), str(cur), "--junit", str(both), "--summary", str(both)),
        "--summary",
        "also given as --junit",
    )
    assert not both.exists()


@pytest.mark.parametrize("flag", OUTPUTS)
@pytest.mark.parametrize("target", ["suite", "baseline", "job"])
def test_run_refuses_an_output_on_its_inputs_before_any_job_runs(runs, tmp_path, ragbench, flag, target):
    """The suite file, a baseline results file, or a file inside a folder the suite writes (its results file)."""
    suite = write_suite(tmp_path)
    base, _ = runs
    out = tmp_path / "out"
    path = {"suite": suite, "baseline": base, "job": out / "quality-d" / "results.jsonl"}[target]
    before = snapshot(suite, base)
    code, stdout, err = ragbench("run", str(suite), "--baseline", str(base.parent), "--out", str(out), flag, str(path))
    refused(code, stdout, err, flag, "is inside" if target == "job" else "is an input")
    assert snapshot(suite, base) == before and not out.exists()


USER_FILE = "my notes, not ragbench's\n"


@pytest.mark.parametrize("flag", ["--junit", "--benchmark-json"])
def test_an_existing_output_is_replaced_only_with_overwrite_and_only_if_compare_wrote_it(
    runs, tmp_path, ragbench, flag
):
    """The --out rule (bench/results/outdir.check_out_file): a user's file is never replaced, --overwrite or
    not; one compare wrote is replaced with --overwrite."""
    base, cur = runs
    mine = tmp_path / "mine.out"
    mine.write_text(USER_FILE)
    compare = ["compare", str(base), str(cur), flag, str(mine)]
    # one rule for every file ragbench writes (issue 50): a user's file is said to be theirs at once, --overwrite or not
    refused(*ragbench(*compare), f"{flag} {mine}: not a file ragbench wrote", "--overwrite replaces only")
    refused(*ragbench(*compare, "--overwrite"), "not a file ragbench wrote")
    assert mine.read_text() == USER_FILE
    ours = tmp_path / "ours.out"
    assert ragbench("compare", str(base), str(cur), flag, str(ours))[0] == 0
    first = ours.read_bytes()
    refused(*ragbench("compare", str(base), str(cur), flag, str(ours)), "exists")
    assert ours.read_bytes() == first
    assert ragbench("compare", str(base), str(cur), flag, str(ours), "--overwrite")[0] == 0


def test_the_summary_is_appended_only_to_a_summary(runs, tmp_path, ragbench, monkeypatch):
    """Appending changes a file as surely as replacing it: only an empty file or compare's own summaries take
    more; $GITHUB_STEP_SUMMARY is GitHub's file for the step and is appended to whatever it holds."""
    base, cur = runs
    mine = tmp_path / "notes.md"
    mine.write_text(USER_FILE)
    for extra in ([], ["--overwrite"]):
        refused(
            *ragbench("compare", str(base), str(cur), "--summary", str(mine), *extra),
            f"--summary {mine}: not a file ragbench wrote",
        )
    assert mine.read_text() == USER_FILE
    ours = tmp_path / "summary.md"
    ours.touch()
    for _ in range(2):
        assert ragbench("compare", str(base), str(cur), "--summary", str(ours))[0] == 0
    assert ours.read_text().count("## ragbench compare: ") == 2
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(mine))
    assert ragbench("compare", str(base), str(cur))[0] == 0
    assert mine.read_text().startswith(USER_FILE) and "## ragbench compare: " in mine.read_text()


def test_run_refuses_a_users_file_as_an_output_before_any_job_runs(runs, tmp_path, ragbench):
    suite = write_suite(tmp_path)
    mine, out = tmp_path / "junit.xml", tmp_path / "out"
    mine.write_text(USER_FILE)
    for extra in ([], ["--overwrite"]):
        code, stdout, err = ragbench("run", str(suite), "--out", str(out), "--junit", str(mine), *extra)
        refused(code, stdout, err, f"--junit {mine}")
    assert mine.read_text() == USER_FILE and not out.exists()
