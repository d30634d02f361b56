"""Ctrl-C and SIGTERM at chosen moments: the results file stays true (each record once, an `end` record
that says what happened), the report is whole or absent (never an earlier run's), the exit status is
130 / 143, and `ragbench report` rebuilds what is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench.core.interrupt import Interrupted, uninterruptible
from bench.results.schema import EndRecord, QueryRecord
from bench.results.store import read_results
from bench.results.writer import ResultsWriter
from tests.harness.beir import write_beir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Path:
    """8 documents, 5 judged queries."""
    return write_beir(
        tmp_path_factory.mktemp("graded"),
        {f"d{i}": f"text {i}" for i in range(8)},
        {f"q{i}": f"query {i}" for i in range(5)},
        [(f"q{i}", f"d{d}", g) for i in range(5) for d, g in ((i, 1), (7 - i, 2))],
    )


def ragbench(moments: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tests.quality.interrupt_driver", moments, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def quality(graded: Path, out: Path, moments: str, *targets: str) -> subprocess.CompletedProcess:
    args = ["quality", "--dataset", str(graded), "--out", str(out), "-m", "P@5", "-m", "nDCG@5", "--depth", "8"]
    for t in targets:
        args += ["-t", t]
    return ragbench(moments, *args)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_each_record_once(path: Path) -> None:
    keys = Counter()
    for r in records(path):
        keys[(r["record"], r.get("name"), r.get("target"), r.get("qid"), r.get("measure"), r.get("a"), r.get("b"))] += 1
    assert [k for k, n in keys.items() if n > 1] == []


@pytest.mark.slow  # subprocesses stopped by a signal
def test_sigterm_keeps_finished_targets_with_their_metrics_and_exits_143(graded, tmp_path):
    out = tmp_path / "out"
    done = quality(graded, out, "search=SIGTERM", "scripted", "scripted:b")
    assert done.returncode == 143, done.stderr
    assert "Traceback" not in done.stderr and "ragbench: interrupted (SIGTERM)" in done.stderr
    # The finished target's table on stdout, as a complete run prints it; the unfinished one is not in it.
    rows = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("│ scripted")]
    assert rows == ["scripted"] and f"report: {out / 'report.html'}" in done.stdout, done.stdout
    results = read_results(out / "results.jsonl")
    assert [t.name for t in results.targets] == ["scripted"]
    assert {m.measure for m in results.metrics if m.target == "scripted"} == {"P_5", "ndcg_cut_5"}
    assert results.end.status == "interrupted" and "SIGTERM" in results.end.error
    assert_each_record_once(out / "results.jsonl")
    md = (out / "report.md").read_text()
    assert "Status: interrupted" in md and "`scripted:b`" in md  # the unfinished target is named


@pytest.mark.slow  # subprocesses stopped by a signal
def test_ctrl_c_while_scoring_writes_each_record_once_and_exits_130(graded, tmp_path):
    out = tmp_path / "out"
    done = quality(graded, out, "comparisons=SIGINT", "scripted", "scripted:b")
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert_each_record_once(out / "results.jsonl")
    results = read_results(out / "results.jsonl")
    assert results.end.status == "interrupted" and not results.comparisons
    assert len(results.metrics) == 4
    assert "No paired comparisons" in (out / "report.md").read_text()


@pytest.mark.slow  # subprocesses stopped by a signal
def test_a_signal_while_a_batch_is_written_is_held_until_the_batch_is_on_disk(graded, tmp_path):
    out = tmp_path / "out"
    done = quality(graded, out, "run-file=SIGTERM", "scripted", "scripted:b")
    assert done.returncode == 143, done.stderr
    results = read_results(out / "results.jsonl")
    # The signal came while the first target's run file was being written: its records still all landed.
    assert [t.name for t in results.targets] == ["scripted"] and len(results.metrics) == 2
    assert len([q for q in results.queries if q.target == "scripted"]) == 5
    assert (out / "runs" / "scripted.trec").read_text().count("\n") == 5 * 8
    assert results.end.status == "interrupted"


@pytest.mark.slow  # subprocesses stopped by a signal
def test_two_ctrl_c_in_quick_succession_leave_no_half_report_and_report_rebuilds_it(graded, tmp_path):
    out = tmp_path / "out"
    first = quality(graded, out, "", "scripted")
    assert first.returncode == 0, first.stderr
    # An earlier run's report must not survive beside the new results.
    done = ragbench(
        "search=SIGINT,report=SIGINT",
        "quality",
        "--dataset",
        str(graded),
        "--out",
        str(out),
        "--overwrite",
        "-t",
        "scripted",
        "-t",
        "scripted:b",
        "-m",
        "P@5",
    )
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "ragbench report" in done.stderr
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert not list(out.glob(".report-*")), "the staging folder is removed"
    results = read_results(out / "results.jsonl")
    assert results.end.status == "interrupted" and [t.name for t in results.targets] == ["scripted"]
    rebuilt = ragbench("", "report", str(out / "results.jsonl"))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "Status: interrupted" in (out / "report.md").read_text()


@pytest.mark.slow  # subprocesses stopped by a signal
def test_ctrl_c_while_the_report_is_written_after_a_complete_run(graded, tmp_path):
    out = tmp_path / "out"
    done = quality(graded, out, "report=SIGINT", "scripted", "scripted:b")
    assert done.returncode == 130, done.stderr
    assert read_results(out / "results.jsonl").end.status == "complete"  # true: every target finished and was scored
    assert not (out / "report.html").exists() and "ragbench report" in done.stderr


@pytest.mark.slow  # subprocesses stopped by a signal
def test_ctrl_c_at_exit_is_not_exit_0(graded, tmp_path):
    done = quality(graded, tmp_path / "out", "exit=SIGINT", "scripted")
    assert done.returncode == 130, done.stderr


@pytest.fixture(scope="module")
def complete_run(graded, tmp_path_factory) -> Path:
    """A complete run of `scripted` and `scripted:b`, made once: each test cuts or repeats records in its own copy."""
    out = tmp_path_factory.mktemp("complete") / "out"
    done = quality(graded, out, "", "scripted", "scripted:b")
    assert done.returncode == 0, done.stderr
    return out


def test_report_rebuilds_metrics_a_cut_run_never_wrote(complete_run, tmp_path):
    out = Path(shutil.copytree(complete_run, tmp_path / "out"))
    full = read_results(out / "results.jsonl")
    # As after a kill -9 right after the second target's records: no metrics of it, no comparisons, no end.
    kept = [
        line
        for line in (out / "results.jsonl").read_text().splitlines()
        if not (
            ('"record": "metrics"' in line and '"target": "scripted:b"' in line)
            or '"comparison"' in line
            or '"end"' in line
        )
    ]
    (out / "results.jsonl").write_text("\n".join(kept) + "\n")
    done = ragbench("", "report", str(out / "results.jsonl"))
    assert done.returncode == 0, done.stderr
    md = (out / "report.md").read_text()
    assert "Metrics recomputed by the report" in md and "Status: incomplete" in md
    mean = full.metric("scripted:b", "P_5").mean
    assert f"| scripted:b | {mean:.4f}" in md


def test_report_reads_a_file_with_repeated_records(complete_run, tmp_path):
    out = Path(shutil.copytree(complete_run, tmp_path / "out"))
    lines = (out / "results.jsonl").read_text().splitlines()
    repeated = [line for line in lines if '"metrics"' in line or '"comparison"' in line]
    (out / "results.jsonl").write_text(
        "\n".join(lines[:-1] + repeated + lines[-1:]) + "\n"
    )  # as earlier versions wrote on Ctrl-C
    done = ragbench("", "report", str(out / "results.jsonl"))
    assert done.returncode == 0, done.stderr
    assert f"{len(repeated)} repeated record(s)" in (out / "report.md").read_text()


def test_the_writer_refuses_a_record_twice_and_keeps_the_first_end(tmp_path):
    writer = ResultsWriter(tmp_path / "r.jsonl")
    query = QueryRecord(target="t", qid="q1", latency_ms=1.0, hits=3)
    writer.write(query)
    with pytest.raises(RuntimeError, match="written twice"):
        writer.write(QueryRecord(target="t", qid="q2", latency_ms=1.0, hits=3), query)
    writer.write(EndRecord(status="complete", finished="now"))
    writer.write(EndRecord(status="interrupted", finished="later"))  # a stop after the end: the end stands
    writer.close()
    assert [r["record"] for r in records(tmp_path / "r.jsonl")] == ["query", "end"]
    assert records(tmp_path / "r.jsonl")[-1]["status"] == "complete"


def test_uninterruptible_holds_a_signal_until_the_block_ends():
    import signal

    before = signal.getsignal(signal.SIGTERM)
    done = []
    with pytest.raises(Interrupted) as caught, uninterruptible():
        os.kill(os.getpid(), signal.SIGTERM)
        done.append("after the signal")
    assert done == ["after the signal"] and caught.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before  # the previous handler is back


@pytest.fixture(scope="module")
def forty(tmp_path_factory) -> Path:
    """40 judged queries: three search batches per target."""
    return write_beir(
        tmp_path_factory.mktemp("forty"),
        {f"d{i}": f"text {i}" for i in range(8)},
        {f"q{i}": f"query {i}" for i in range(40)},
        [(f"q{i}", f"d{i % 8}", 1) for i in range(40)],
    )


@pytest.mark.slow  # subprocesses stopped by a signal
def test_resume_keeps_finished_queries_and_targets_and_gives_the_uninterrupted_figures(forty, tmp_path, monkeypatch):
    out, log = tmp_path / "out", tmp_path / "asked.log"
    args = [
        "quality",
        "--dataset",
        str(forty),
        "-m",
        "P@5",
        "-m",
        "nDCG@5",
        "--depth",
        "8",
        "-t",
        "scripted",
        "-t",
        "scripted:b",
    ]
    stopped = ragbench("search-3=SIGTERM", *args, "--out", str(out))  # in the first target's third batch
    assert stopped.returncode == 143, stopped.stderr
    assert len((out / "runs" / "scripted.partial.jsonl").read_text().splitlines()) == 32  # two batches kept
    assert read_results(out / "results.jsonl").end.status == "interrupted"

    monkeypatch.setenv("SEARCH_LOG", str(log))
    resumed = ragbench("", *args, "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    asked = Counter(line.split()[0] for line in log.read_text().splitlines())
    assert asked == {"scripted": 8, "scripted:b": 40}  # only what was left
    assert not (out / "runs" / "scripted.partial.jsonl").exists()
    assert_each_record_once(out / "results.jsonl")
    monkeypatch.delenv("SEARCH_LOG")

    whole = tmp_path / "whole"
    assert ragbench("", *args, "--out", str(whole)).returncode == 0
    a, b = read_results(out / "results.jsonl"), read_results(whole / "results.jsonl")
    assert a.end.status == "complete" and len(a.comparisons) == len(b.comparisons) == 2
    assert [(m.target, m.measure, m.per_query) for m in a.metrics] == [
        (m.target, m.measure, m.per_query) for m in b.metrics
    ]
    assert (out / "runs" / "scripted.trec").read_text() == (whole / "runs" / "scripted.trec").read_text()


@pytest.mark.slow  # subprocesses stopped by a signal
def test_resume_refuses_other_options_and_a_complete_run(forty, tmp_path):
    out = tmp_path / "out"
    args = ["quality", "--dataset", str(forty), "-m", "P@5", "--depth", "8", "-t", "scripted"]
    assert ragbench("search-2=SIGINT", *args, "--out", str(out)).returncode == 130
    other = ragbench("", *args, "--seed", "7", "--resume", str(out))
    assert other.returncode == 2 and other.stderr.count("\n") == 1 and "--seed differ" in other.stderr
    assert ragbench("", *args, "--resume", str(out)).returncode == 0
    again = ragbench("", *args, "--resume", str(out))
    assert again.returncode == 2 and "complete; nothing to continue" in again.stderr
