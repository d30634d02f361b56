"""`ragbench grow` end to end on builtin:numpy-docs with the bm25 engine at tiny rungs: records, report, resume,
and bad input refused with one line and exit 2 before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.datasets.numpy_docs import numpy_docs_dataset
from bench.results.store import read_results

RUNGS = "100,200,400"


@pytest.fixture(scope="module")
def numpy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """builtin:numpy-docs built once for the module, in a cache of its own."""
    cache = tmp_path_factory.mktemp("cache")
    numpy_docs_dataset(cache / "datasets")
    return cache


@pytest.fixture
def grow(ragbench, numpy_cache, monkeypatch):
    monkeypatch.setenv("RAGBENCH_CACHE", str(numpy_cache))
    return lambda *args: ragbench("grow", "--dataset", "builtin:numpy-docs", "--queries", "20", *args)


def test_a_ladder_of_bm25_writes_a_record_per_rung_the_answer_and_the_report(grow, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--slo", "p99=10s", "--out", out)
    assert code == 0, stderr
    results = read_results(out / "results.jsonl")
    rungs = results.grow_rungs
    assert [(r.rung, r.size, r.added) for r in rungs] == [(1, 100, 100), (2, 200, 100), (3, 400, 200)]
    for rung in rungs:
        assert rung.ingest_mode == "rebuild" and rung.queries == 20 and not rung.errors
        assert 0.0 <= rung.metrics["nDCG@10"] <= 1.0 and 0.0 <= rung.metrics["R@100"] <= 1.0
        assert 0 < rung.latency_ms["p50"] <= rung.latency_ms["p99"] and rung.latency_ms["n"] == 20
        # the host is recorded; a local engine's lag is not (it holds the interpreter the probe would wait on)
        assert rung.machine is not None and rung.machine.cores >= 1 and rung.lag_p99_ms is None
    assert not results.grow_summaries[0].busy_rungs  # no local rung is ever the machine's
    assert [f"rung {i}/3" in stderr for i in (1, 2, 3)] == [True] * 3
    (summary,) = results.grow_summaries
    assert summary.target == "bm25" and summary.largest_ok == 400 and summary.first_break is None
    assert {law.quantity for law in summary.laws} == {"p50", "p99"}
    assert summary.answer in stdout
    assert results.header.grow is not None and results.header.grow["rungs"] == [100, 200, 400]
    report = (out / "report.md").read_text()
    assert report.index("## Answer") < report.index("## Rungs")
    for plot in ("grow_latency.png", "grow_quality.png", "grow_ingest.png"):
        assert (out / "plots" / plot).is_file()


def _cut_after_first_rung(results_file: Path) -> list[str]:
    """The results file as an interruption after the first rung leaves it: header and rung 1 only."""
    lines = results_file.read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["record"] == "run" or json.loads(line).get("rung") == 1]
    results_file.write_text("".join(kept))
    return kept


def test_resume_continues_after_the_last_finished_rung(grow, tmp_path):
    out = tmp_path / "out"
    assert grow("-t", "bm25", "--rungs", RUNGS, "--out", out)[0] == 0
    kept = _cut_after_first_rung(out / "results.jsonl")
    code, _, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--resume", out)
    assert code == 0, stderr
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    assert lines[:2] == kept  # the finished rung, as it was
    rungs = read_results(out / "results.jsonl").grow_rungs
    assert [(r.rung, r.resumed) for r in rungs] == [(1, False), (2, True), (3, False)]
    assert "rung 1/3" not in stderr and "rung 2/3" in stderr


def test_resume_with_another_ladder_or_of_a_complete_run_is_refused(grow, tmp_path):
    out = tmp_path / "out"
    assert grow("-t", "bm25", "--rungs", RUNGS, "--out", out)[0] == 0
    code, _, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--resume", out)
    assert code == 2 and "that run is complete" in stderr
    _cut_after_first_rung(out / "results.jsonl")
    # each option that differs named by its flag, briefly (two 600-character dicts with an enum's repr before)
    code, _, stderr = grow("-t", "bm25", "--rungs", "100,300", "--resume", out)
    assert code == 2 and len(stderr.splitlines()) == 1 and len(stderr) < 220, stderr
    assert "--rungs 100,200,400 there, 100,300 now; give the same options" in stderr and "<" not in stderr
    code, _, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--queries", "10", "--resume", out)
    assert code == 2 and "--queries 20 there, 10 now" in stderr and "--max-queries" not in stderr, stderr


def test_resume_refuses_another_engine_under_the_name_and_records_changed_by_hand(grow, tmp_path):
    """One law was fitted across two engines under one name, and a rung 99 made the run "complete", an nDCG of 7.5
    gave "-6.029 per tenfold size": each is refused with one line before anything is measured."""
    out = tmp_path / "out"
    assert grow("-t", "e=bm25", "--rungs", RUNGS, "--out", out)[0] == 0
    kept = _cut_after_first_rung(out / "results.jsonl")
    code, _, stderr = grow("-t", "e=dense", "--rungs", RUNGS, "--resume", out)
    assert code == 2 and "target e was bm25 there, dense now (another engine under the same name)" in stderr, stderr
    rung = json.loads(kept[1])
    for tampered, said in (
        ({"rung": 99}, "rung 99 is not one of the ladder's 3"),
        ({"metrics": {**rung["metrics"], "nDCG@10": 7.5}}, "nDCG@10 7.5 is outside 0 to 1"),
        ({"latency_ms": {**rung["latency_ms"], "p99": -1.0}}, "latency p99 -1.0 is no count or time"),
        ({"size": 150}, "size 150 is not rung 1's 100"),
    ):
        (out / "results.jsonl").write_text(kept[0] + json.dumps({**rung, **tampered}) + "\n")
        code, _, stderr = grow("-t", "e=bm25", "--rungs", RUNGS, "--resume", out)
        assert code == 2 and said in stderr and len(stderr.splitlines()) == 1, stderr


def test_a_second_grow_on_one_out_is_refused_while_the_first_runs(grow, tmp_path):
    """Two runs on one --out: the first's later rungs vanished under the second's --overwrite."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".ragbench-grow.lock").write_text(str(child.pid))  # as the first run holds it
    try:
        code, _, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--out", out, "--overwrite")
        assert code == 2 and f"--out {out}: another ragbench run (pid {child.pid}) is using it" in stderr, stderr
        assert not (out / "results.jsonl").exists()
    finally:
        child.stdin.close()  # type: ignore[union-attr]
        child.wait()
    code, _, stderr = grow("-t", "bm25", "--rungs", "100", "--out", out)  # its holder gone: taken over
    assert code == 0, stderr
    assert not (out / ".ragbench-grow.lock").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-t", "bm25:nope", "--rungs", RUNGS], "unknown variant"),
        (["-t", "openwebui:nope@http://127.0.0.1:9", "--rungs", RUNGS], "variant 'nope' unknown"),
        (["-t", "nope", "--rungs", RUNGS], "unknown kind 'nope'"),
        (["-t", "bm25", "--rungs", "200,100"], "rungs must increase"),
        (["-t", "bm25", "--rungs", "5,100"], "below the dataset's own"),
        (["-t", "bm25", "--rungs", RUNGS, "--slo", "p99=2"], "expected pNN=DURATION with a unit"),
        (["-t", "bm25", "--rungs", RUNGS, "--unit", "pages"], "expected docs or chunks"),
        (["-t", "bm25", "--rungs", RUNGS, "--distractors", "synthetic:x"], "synthetic:SEED"),
        (["-t", "openwebui@http://127.0.0.1:9", "--rungs", RUNGS, "--unit", "chunks"], "give --meter-upstream"),
        (["-t", "bm25", "--rungs", RUNGS, "--meter-upstream", "ftp://x"], "expected [ROUTE=]http(s)://"),
        (["-t", "bm25", "--rungs", RUNGS, "--meter-upstream", "http://127.0.0.1:9"], "--meter-upstream embedding="),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(grow, tmp_path, args, said):
    out = tmp_path / "out"
    code, _, stderr = grow(*args, "--out", out)
    assert code == 2 and said in stderr and len(stderr.splitlines()) == 1, stderr
    assert not (out / "results.jsonl").exists()


def test_a_distractor_source_that_cannot_fill_a_rung_is_refused_before_measuring(grow, tmp_path, tiny):
    out = tmp_path / "out"
    code, _, stderr = grow("-t", "bm25", "--rungs", RUNGS, "--distractors", tiny, "--out", out)
    assert code == 2 and "holds 4 documents; rung 100 needs" in stderr and len(stderr.splitlines()) == 1
    assert not (out / "results.jsonl").exists()


def test_a_ladder_records_the_apps_rss_and_store_per_rung(grow, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "index").write_bytes(os.urandom(50_000))
    spec = f"me=bm25?pid={os.getpid()}&data_dir={store}"
    code, _, err = grow("-t", spec, "--rungs", RUNGS, "--out", tmp_path / "out")
    assert code == 0, err
    rungs = read_results(tmp_path / "out" / "results.jsonl").grow_rungs
    assert len(rungs) == 3 and all(r.target == "me" for r in rungs)
    assert all((r.app_rss_bytes or 0) > 0 and (r.store_bytes or 0) >= 50_000 for r in rungs)
    assert (tmp_path / "out" / "plots" / "grow_memory.png").is_file()


def test_a_full_disk_is_one_line_with_the_finished_rungs_kept(grow, tmp_path, monkeypatch):
    import errno

    from bench.results.schema import GrowRungRecord
    from bench.results.writer import ResultsWriter

    real = ResultsWriter.write
    rungs_written = []

    def write(self, *records):
        rungs_written.extend(r for r in records if isinstance(r, GrowRungRecord))
        if len(rungs_written) >= 2:  # the disk fills as rung 2's record is written, and stays full
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, *records)

    monkeypatch.setattr(ResultsWriter, "write", write)
    out = tmp_path / "out"
    code, _, err = grow("-t", "bm25", "--rungs", RUNGS, "--out", out)
    assert code == 2, err
    assert [r.rung for r in read_results(out / "results.jsonl").grow_rungs] == [1]
    assert "Traceback" not in err and "No space left on device" in err.splitlines()[-1]
