"""The report of `load --trace`: the verdict first, recorded beside replayed, from trace-replay.json alone."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from bench.core.errors import InputError
from bench.load.trace_compare import RouteComparison
from bench.report import write_reports
from bench.report.trace import problems, write_trace_report

GOOD = RouteComparison(
    route="embedding",
    endpoint="fx",
    calls_recorded=200,
    calls_replayed=200,
    errors=0,
    behind=31,
    p50_recorded_ms=43.6,
    p50_replayed_ms=41.5,
    p99_recorded_ms=76.3,
    p99_replayed_ms=75.7,
    texts_recorded=3487,
    texts_replayed=3487,
    texts_identical=True,
    arrivals_ks_p=1.0,
)


def write_summary(folder: Path, rows: list[RouteComparison], speed: float = 1.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"trace": "trace.jsonl", "speed": speed, "loops": 1, "routes": [asdict(r) for r in rows]}
    (folder / "trace-replay.json").write_text(json.dumps(summary))
    return folder


def test_a_faithful_replay_says_so_first_then_every_figure(tmp_path):
    write_trace_report(write_summary(tmp_path, [GOOD]))
    md = (tmp_path / "report.md").read_text()
    first = md.index("FAITHFUL: every call answered")
    assert first < md.index("| route |")  # the verdict before the table
    assert "43.6 / 41.5 (-4.8%)" in md and "76.3 / 75.7 (-0.8%)" in md and "3487 / 3487, identical per call" in md
    assert "1.000" in md and "| 31 |" in md
    assert "FAITHFUL" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize(
    "change,says",
    [
        ({"p99_replayed_ms": 90.0}, "p99 +18.0% from the recording"),
        ({"p50_replayed_ms": None, "p99_replayed_ms": None}, "no p50 replayed"),
        ({"arrivals_ks_p": 0.01}, "KS p 0.010"),
        ({"texts_identical": False, "texts_replayed": 3000}, "texts per call differ"),
        ({"errors": 3}, "3 of 200 calls failed"),
    ],
)
def test_each_miss_of_the_fidelity_target_is_named(tmp_path, change, says):
    row = replace(GOOD, **change)
    assert any(says in p for p in problems(row, 1.0)), problems(row, 1.0)
    write_trace_report(write_summary(tmp_path, [GOOD, replace(row, route="rerank")]))
    md = (tmp_path / "report.md").read_text()
    assert "embedding → fx: FAITHFUL" in md and "rerank → fx: NOT FAITHFUL" in md and says in md


def test_a_faster_replay_is_not_judged_on_latency(tmp_path):
    slower = replace(GOOD, p99_replayed_ms=300.0)
    assert problems(slower, 2.0) == [] and problems(slower, 1.0)
    write_trace_report(write_summary(tmp_path, [slower], speed=2.0))
    assert "latency not compared at ×2" in (tmp_path / "report.md").read_text()


def test_ragbench_report_rebuilds_a_trace_folder_and_refuses_a_broken_summary(tmp_path):
    folder = write_summary(tmp_path / "replay", [GOOD])
    assert write_reports(folder) == [folder / "report.html"]
    (folder / "trace-replay.json").write_text('{"trace": "t", "speed": 1, "loops": 1, "routes": [{"route": "e"}]}')
    with pytest.raises(InputError, match="not a load --trace summary"):
        write_reports(folder)


def test_a_replay_beside_a_results_file_leaves_its_report_alone(tmp_path):
    folder = write_summary(tmp_path, [GOOD])
    (folder / "results.jsonl").write_text("{}\n")
    (folder / "report.html").write_text("the load run's report")
    assert write_trace_report(folder) == folder / "trace-report.html"
    assert (folder / "report.html").read_text() == "the load run's report" and (folder / "trace-report.md").exists()


def test_the_size_trace_report_says_the_answer_the_best_so_far_and_the_machines_share(tmp_path: Path):
    """`size --trace`'s report (a results file with a `trace_size` record): the answer first — how much of the
    traffic fits, the replicas — then why it is a best so far, the too-busy replay, and every probe's figures."""
    from bench.core.machine import MachineView
    from bench.endpoints.spec import parse_endpoint_spec
    from bench.load.sweep import load_header
    from bench.report import write_report
    from bench.results.schema import EndRecord, EndStatus, RunCommand, SpeedOutcome, TraceSizeRecord, TraceSpeedProbe
    from bench.results.writer import ResultsWriter
    from tests.load.conftest import inline_workload

    host = MachineView(cores=2, load_start=14.2, load_end=15.0, busy_percent=100.0, steal_percent=0.0)
    probes = [
        TraceSpeedProbe(
            1.0,
            SpeedOutcome.FAIL,
            "embedding p99 137 ms passes 100 ms",
            300,
            20.2,
            22.0,
            14.8,
            14.8,
            137.0,
            0,
            3.8,
            host,
        ),
        TraceSpeedProbe(0.5, SpeedOutcome.PASS, "", 300, 40.4, 42.0, 7.42, 7.42, 87.0, 0, 4.0, host),
        TraceSpeedProbe(
            0.75,
            SpeedOutcome.TOO_BUSY,
            "this machine was too busy: ...",
            300,
            26.9,
            29.0,
            11.1,
            11.1,
            104.0,
            2,
            26.0,
            host,
        ),
    ]
    record = TraceSizeRecord(
        "trace.csv",
        100.0,
        99.0,
        0.001,
        0.5,
        1.0,
        "embedding p99 137 ms passes 100 ms",
        1.0,
        2,
        probes,
        stopped="stopped by SIGTERM",
        too_busy="at × 0.75: this machine was too busy: ...",
    )
    header = load_header(RunCommand.SIZE, inline_workload(), [parse_endpoint_spec("fx=tei@http://127.0.0.1:9")], 0, {})
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(header, record, EndRecord(status=EndStatus.INTERRUPTED, finished="now"))
    writer.close()
    write_report(tmp_path / "results.jsonl")
    md = (tmp_path / "report.md").read_text()
    assert "the traffic as recorded does not fit: ×0.5 of it does; 2 replica(s) for ×1" in md
    assert "best so far (stopped by SIGTERM)" in md and "at × 0.75: this machine was too busy" in md
    assert "| ×0.75 | too busy | 104.0 | 11.1 / 11.1 |" in md and "load 15.0 on 2 cores" in md
