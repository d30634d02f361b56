"""Issue 45: a load point whose window the client could not carry (its loop lag past a tenth of its median answer)
is the machine's: `compare` and `history` say "this machine was too busy", never a pass or a failure of it."""

from __future__ import annotations

import json

import pytest

from bench.core.machine import MachineView
from bench.results.schema import EndRecord, RunHeader
from bench.results.writer import ResultsWriter
from tests.gate.helpers import load_point, write_load_results
from tests.harness.cli import run_cli
from tests.history.helpers import created

STALLED = {"loop_lag_p99_ms": 180.0}  # p50 20 ms tolerates 5 ms (the floor): 180 ms is the machine's
HOST = MachineView(cores=2, load_start=11.0, load_end=12.5, busy_percent=99.0, steal_percent=0.0)


def _point(texts_per_s: float, busy: bool = False):
    extra = {"client_extra": STALLED, "machine": HOST} if busy else {}
    return load_point(texts_per_s=texts_per_s, p99_ms=40.0, **extra)


@pytest.fixture
def cli(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return lambda *args: run_cli([*map(str, args)], monkeypatch, capsys)


def test_compare_says_the_machine_was_too_busy_rather_than_fail_or_pass(tmp_path, cli):
    base = write_load_results(tmp_path / "base", [_point(1000.0)])
    cur = write_load_results(tmp_path / "cur", [_point(600.0, busy=True)])  # x0.60: a failure were it the endpoint's
    code, out, _ = cli("compare", base, cur, "--min-throughput-ratio", "0.95")
    first = out.splitlines()[0]
    assert code == 0 and "1 load point(s) not judged: this machine was too busy" in first
    assert "not gated: the current run: this machine was too busy: the client's event loop woke 180 ms late" in out
    assert "load 12.5 on 2 cores, CPUs 99% busy" in out
    (check,) = json.loads(cli("compare", base, cur, "--min-throughput-ratio", "0.95", "--format", "json")[1])["checks"]
    assert check["status"] == "info" and check["figures"]["machine_too_busy"][0].startswith("current: this machine")
    calm = write_load_results(tmp_path / "calm", [_point(600.0)])
    assert cli("compare", base, calm, "--min-throughput-ratio", "0.95")[0] == 1  # the same drop, carried: a failure


def _run(folder, run: int, texts_per_s: float, busy: bool = False) -> None:
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(
        RunHeader(command="load", created=created(run), ragbench_version="test", dataset={"name": "load workload"}),
        _point(texts_per_s, busy),
        EndRecord(status="complete", finished=created(run)),
    )
    writer.close()


FLAT = (1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0, 998.0, 1008.0, 992.0, 1000.0)


def test_history_neither_fails_a_busy_newest_run_nor_draws_a_bound_from_a_busy_earlier_one(tmp_path, cli):
    for run, value in enumerate(FLAT):
        _run(tmp_path / "h" / f"run{run:02d}", run, value)
    _run(tmp_path / "h" / "run10", 10, 600.0, busy=True)
    code, out, _ = cli("history", tmp_path / "h", "--min-throughput-ratio", "0.95")
    assert code == 0 and "not judged: this machine was too busy: the client's event loop woke 180 ms late" in out
    assert "left out of its series" in out
    _run(tmp_path / "h" / "run11", 11, 1001.0)
    code, out, _ = cli("history", tmp_path / "h", "--min-throughput-ratio", "0.95", "--format", "json")
    (series,) = [s for s in json.loads(out)["series"] if s["figure"] == "texts/s"]
    assert code == 0 and 600.0 not in series["values"] and len(series["out_of_line"]["reference_runs"]) == 10
