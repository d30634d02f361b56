"""One run lifecycle for every command that writes results (bench/results/lifecycle.py): the same refusal of an
earlier run, the same --overwrite, the same `end` record after a stop, and the report of whatever finished."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.core.errors import UserError
from bench.core.interrupt import Interrupted
from bench.results.lifecycle import Output, open_run
from bench.results.schema import DoctorFinding
from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli
from tests.harness.records import run_header

ROOT = Path(__file__).resolve().parents[2]
EARLIER = "holds an earlier run (results.jsonl); give --overwrite to replace it, or another --out"


@pytest.fixture
def commands(tmp_path: Path, load_server):
    """Each command that writes results, given everything but --out: the cheap ones against a TEI-shaped
    loopback server (tests/load/fixture_server.py), a three-document set, or a port where nothing listens."""
    url, _ = load_server(service_ms=1)
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"text number {i} about {w}\n" for i, w in enumerate(["cats", "dogs", "rain", "snow"])))
    data = write_beir(
        tmp_path / "data",
        {"d1": "cats purr", "d2": "dogs bark", "d3": "birds sing"},
        {"q1": "cats", "q2": "dogs"},
        [("q1", "d1", 1), ("q2", "d2", 1)],
    )
    quick = ["--warmup", "0s", "--timeout", "5s"]
    return {
        "quality": (["quality", "--dataset", str(data), "-t", "bm25", "-m", "P@2", "--depth", "5"], 0),
        "identity": (["identity", "-e", f"a=tei@{url}", "-e", f"b=tei@{url}?batch=1", "--texts", str(texts)], None),
        "doctor": (["doctor", "--tei", "http://127.0.0.1:9"], 1),
        "load": (["load", "-e", f"t=tei@{url}", "--requests", "4", "--texts", str(texts), *quick], 0),
        "size": (
            [
                "size",
                "-e",
                f"t=tei@{url}",
                "--slo-p99",
                "200",  # a probe lasts at least 5 SLOs (bench/sizing/plan.py): 1 s, not 5 s
                "--probe-requests",
                "20",
                "--batch",
                "1",
                "--max-concurrency",
                "1",
                "--burst-batch",
                "1",
                "--burst-concurrency",
                "1",
                "--burst",
                "2",
                "--max-probes",
                "2",
                # A 1 ms server under a 200 ms SLO saturates near 98% busy, where a steady verdict needs minutes of
                # probe (docs/sizing.md): the budget bounds the run; the lifecycle is what is tested here.
                "--max-time",
                "10s",
                "--duration",
                "0.2s",
                "--texts",
                str(texts),
                "--no-nvml",
                *quick,
            ],
            0,
        ),
    }


def earlier_run(out: Path, monkeypatch, capsys) -> bytes:
    """A folder holding another command's run (doctor's: no server, well under a second), and a user's file."""
    assert run_cli(["doctor", "--tei", "http://127.0.0.1:9", "--out", str(out)], monkeypatch, capsys)[0] == 1
    (out / "notes.txt").write_text("mine")
    return (out / "results.jsonl").read_bytes()


@pytest.mark.parametrize("command", ["quality", "identity", "doctor", "load", "size"])
def test_every_command_refuses_an_earlier_run_in_one_line_and_replaces_it_with_overwrite(
    commands, command, tmp_path, monkeypatch, capsys
):
    args, expected = commands[command]
    out = tmp_path / "out"
    before = earlier_run(out, monkeypatch, capsys)
    code, stdout, err = run_cli([*args, "--out", str(out)], monkeypatch, capsys)
    assert (code, err) == (2, f"ragbench: error: --out {out}: {EARLIER}\n"), stdout + err
    assert (out / "results.jsonl").read_bytes() == before
    code, stdout, err = run_cli([*args, "--out", str(out), "--overwrite"], monkeypatch, capsys)
    assert code == expected or (expected is None and code in (0, 1)), stdout + err
    results = read_results(out / "results.jsonl")
    assert results.header.command == command and results.end.status == "complete"
    assert (out / "notes.txt").read_text() == "mine"  # only ragbench's files are replaced
    assert f"report: {out / 'report.html'}" in stdout and (out / "report.html").is_file()


@pytest.mark.slow  # a subprocess stopped by a signal
@pytest.mark.parametrize("command", ["load", "size"])
def test_sigterm_ends_load_and_size_with_one_wording(commands, command, tmp_path):
    """A stop is said the same way by every command: `interrupted (SIGTERM)`, whatever was running."""
    args, _ = commands[command]
    args = [a if a not in ("4", "0.2s") else ("100000" if a == "4" else "30s") for a in args]  # long enough to stop
    if "--max-time" in args:  # no budget: the run is still measuring when the signal comes
        at = args.index("--max-time")
        args = args[:at] + args[at + 2 :]
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", *args, "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and '"run"' in results.read_text()):
        time.sleep(0.05)
    time.sleep(1.0)  # into the first point
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr.decode()[-800:]
    end = read_results(results).end
    assert (end.status, end.error) == ("interrupted", "interrupted (SIGTERM)")
    assert (out / "report.html").is_file()


SUITE = """
[endpoints]
tei = "tei@{url}"
tei1 = "tei@{url}?batch=1"

[[identity]]
endpoints = ["tei", "tei1"]
texts = "texts.txt"

[[load]]
endpoints = ["tei"]
requests = 4
warmup = "0s"
texts = "texts.txt"
"""


def test_a_suite_passes_overwrite_to_every_step_and_identity_refuses_like_quality(
    tmp_path, monkeypatch, capsys, load_server
):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    url, _ = load_server(service_ms=1)
    (tmp_path / "texts.txt").write_text("".join(f"text {i} about {w}\n" for i, w in enumerate(["a", "b", "c", "d"])))
    suite, out = tmp_path / "suite.toml", tmp_path / "out"
    suite.write_text(SUITE.format(url=url))
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out)], monkeypatch, capsys)
    assert code in (0, 1), stdout + err  # four texts may be too few for an identity verdict: that is not the point
    for job in ("identity", "load"):
        (out / job / "notes.txt").write_text("mine")
    before = {job: (out / job / "results.jsonl").read_bytes() for job in ("identity", "load")}
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out)], monkeypatch, capsys)
    assert (code, err) == (2, f"ragbench: error: --out {out / 'identity'}: {EARLIER}\n"), stdout + err
    assert {job: (out / job / "results.jsonl").read_bytes() for job in before} == before
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out), "--overwrite"], monkeypatch, capsys)
    assert code in (0, 1), stdout + err
    for job, old in before.items():
        assert (out / job / "results.jsonl").read_bytes() != old and (out / job / "notes.txt").read_text() == "mine"
        assert read_results(out / job / "results.jsonl").end.status == "complete"


# --- the lifecycle itself, without a command ---------------------------------------------------------------


@pytest.mark.parametrize(
    "stop, status, error",
    [
        (None, "complete", None),
        (UserError("endpoint t: refused"), "failed", "endpoint t: refused"),
        (ValueError("odd"), "failed", "internal error: ValueError: odd"),
        (Interrupted(signal.SIGTERM), "interrupted", "interrupted (SIGTERM)"),
        (KeyboardInterrupt(), "interrupted", "interrupted (SIGINT)"),
    ],
)
def test_one_end_record_for_each_way_a_run_ends_and_the_report_of_what_finished(tmp_path, stop, status, error):
    reported: list[Path] = []
    shown: list[int] = []
    output = Output(
        tmp_path, report=lambda r: reported.append(r.path) or r.path, show=lambda r: shown.append(len(r.of("note")))
    )
    try:
        with open_run(output, run_header(targets=["a"])):
            if stop is not None:
                raise stop
    except BaseException as exc:
        assert exc is stop  # the exception goes on, after the end record and the report
    results = read_results(tmp_path / "results.jsonl")
    assert (results.end.status, results.end.error) == (status, error)
    assert reported == [tmp_path / "results.jsonl"] and shown == [0]


def test_closing_records_come_with_the_end_record_and_not_after_a_stop(tmp_path):
    """Quality's comparisons are written with the `end` record; a user who stopped the run does not wait for them."""
    for stop, folder in ((None, "done"), (Interrupted(signal.SIGINT), "stopped")):
        try:
            with open_run(Output(tmp_path / folder), run_header(targets=["a"])) as run:
                run.closing = lambda status: [DoctorFinding(hop="tei", ok=True, message=status)]
                if stop is not None:
                    raise stop
        except KeyboardInterrupt:
            pass
        results = read_results(tmp_path / folder / "results.jsonl")
        assert [f.message for f in results.of("doctor_finding")] == ([] if stop else ["complete"])


def test_resume_is_refused_in_one_line_unless_there_is_a_matching_interrupted_run(tmp_path):
    keep_all = lambda previous: [r for kind in previous.records.values() for r in kind]  # noqa: E731
    with (
        pytest.raises(UserError, match=r"no results.jsonl there to continue"),
        open_run(Output(tmp_path / "none", resume=True), run_header(targets=["a"]), keep_all),
    ):
        pass
    with pytest.raises(KeyboardInterrupt), open_run(Output(tmp_path), run_header(targets=["a"])) as run:
        run.write(DoctorFinding(hop="tei", ok=True, message="fine"))  # kept by `keep_all` below
        raise KeyboardInterrupt
    with (
        pytest.raises(UserError, match=r"--seed differ from the interrupted run's \(0 there, 1 now\)"),
        open_run(Output(tmp_path, resume=True), run_header(targets=["a"], seed=1), keep_all),
    ):
        pass
    with (
        pytest.raises(UserError, match="load cannot continue a run"),
        open_run(Output(tmp_path, resume=True), run_header("load")),
    ):
        pass
    with open_run(Output(tmp_path, resume=True), run_header(targets=["a"]), keep_all) as run:
        assert run.resumed and len(run.kept) == 1
    with (
        pytest.raises(UserError, match="that run is complete; nothing to continue"),
        open_run(Output(tmp_path, resume=True), run_header(targets=["a"]), keep_all),
    ):
        pass


@pytest.mark.parametrize(
    ("changed", "said"),
    [
        ({"queries": 10, "documents": 180}, r"--max-queries differs from the interrupted run's \(20 queries there, 10"),
        ({"documents": 100}, r"--max-docs differs from the interrupted run's \(200 documents there, 100 now\)"),
        ({"source": "/b"}, r"--dataset differs from the interrupted run's \(/a source there, /b"),
        ({}, r"the dataset's files changed \(fingerprint f1 there, f2 now\)"),
    ],
)
def test_a_resume_over_another_sample_names_the_option_that_differs(tmp_path, changed, said):
    """`quality --resume` with another --max-queries: not "dataset (fingerprint) differ", but the option."""
    data = {"source": "/a", "fingerprint": "f1", "queries": 20, "documents": 200}
    with pytest.raises(KeyboardInterrupt), open_run(Output(tmp_path), run_header(targets=["a"], dataset=data)):
        raise KeyboardInterrupt
    now = run_header(targets=["a"], dataset={**data, "fingerprint": "f2", **changed})
    with pytest.raises(UserError, match=said), open_run(Output(tmp_path, resume=True), now, lambda previous: []):
        pass
