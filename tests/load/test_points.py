"""Load points a user can read (issue 24, item 3): a drained server between points, a request that outlasts its
window named, quantiles on too few answers shown as insufficient, an open loop behind its own schedule, and the
per-request CSV."""

from __future__ import annotations

import csv
import json
import math
import re

import jsonschema
import pytest
from hdrh.histogram import HdrHistogram

from bench.commands.load import check_load
from bench.commands.load_console import drain_line, summary_table
from bench.commands.load_request import LoadRequest
from bench.core.errors import UserError
from bench.endpoints.spec import parse_endpoint_spec
from bench.load import histograms
from bench.load.endpoint import DRAIN_FACTOR, DRAIN_SLACK_S, LoadEndpoint
from bench.load.measure import measure_point
from bench.load.plan import plan_sweep
from bench.load.points import BEHIND, FAILED, OK, PointConfig, SweepConfig, Window, judge
from bench.load.schedule import Arrival, open_schedule
from bench.load.sweep import run_load
from bench.results.lifecycle import Output
from bench.results.schema import LatencySummary, LoadRequests
from bench.results.store import read_results
from bench.results.writer import record_line
from tests.load.conftest import inline_workload
from tests.paths import REPO


@pytest.fixture
def endpoint_at(load_server):
    """`endpoint_at(**server options)`: a preflighted LoadEndpoint on a fixture server (its idle probe measured)."""
    opened: list[LoadEndpoint] = []

    def start(**options) -> LoadEndpoint:
        url, _ = load_server(**options)
        endpoint = LoadEndpoint(parse_endpoint_spec(f"t=tei@{url}"))
        endpoint.preflight("embed", 5.0)
        opened.append(endpoint)
        return endpoint

    yield start
    for endpoint in opened:
        endpoint.close()


def _valid(record) -> None:
    """The record as written validates against the committed JSON Schema (nulls, new fields and all)."""
    schema = json.loads((REPO / "docs" / "results.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads(record_line(record)))


# --- a request that outlasts its point --------------------------------------------------------------


# The warm-up request: a batch of 32 texts at PER_TEXT_MS each (1.9 s) outlasts the warm-up and the 0.5 s window
# as long as it is sent in the warm-up. LATE_START_S, the warm-up, is the margin for how late the worker may send
# it: the plan reaches the worker process START_LEAD_S (0.25 s) ahead of its start, and a worker that a busy machine
# schedules later than that sends late; a 0.2 s warm-up left it in the window under CPU-bound neighbours on both
# cores (load average 6-12), so the point measured a request instead of failing.
PER_TEXT_MS, LATE_START_S = 60, 1.0


@pytest.mark.slow  # a batch of 32 that takes about two seconds, by design
def test_a_warmup_request_outlasting_the_window_is_named_with_the_duration_it_needs(endpoint_at, pool):
    endpoint = endpoint_at(service_ms=1, per_text_ms=PER_TEXT_MS)  # a probe of one text: 61 ms
    point = PointConfig(op="embed", batch=32, concurrency=1, warmup_s=LATE_START_S, duration_s=0.5, timeout_s=5.0)
    assert point.warmup_s + point.duration_s < 32 * PER_TEXT_MS / 1000  # sent in the warm-up, it outlasts the window
    record = measure_point(endpoint, point, inline_workload(), pool)
    assert record.status == FAILED and record.requests.sent == 0, record.problem
    took = float(re.search(r"a request took ([\d.]+) s, longer than the 0.5 s window", record.problem).group(1))
    # its service time, shown to 0.1 s: not a hung server (a busy machine only adds to it)
    assert took >= 32 * PER_TEXT_MS / 1000 - 0.05
    assert f"use --duration >= {math.ceil(2 * took)}s" in record.problem
    assert "hung" not in record.problem


def test_judge_without_a_warmup_answer_says_none_came():
    status, problem = judge(LoadRequests(sent=0, ok=0, errors={}), 0.0, Window(intended_s=5.0))
    assert status == FAILED and "no answer came during the warm-up" in problem


# --- draining between points -------------------------------------------------------------------------


# The calm point's timeout: 100 ms of service and 900 ms of margin for a busy machine (250 ms failed under load
# average 6-8, 500 ms held there); the backlog a missing drain leaves (~2 s) still outlasts it.
CALM_TIMEOUT_S = 1.0


@pytest.mark.slow  # a backlog of timed-out requests, by design
def test_the_backlog_a_point_leaves_is_drained_before_the_next_point(endpoint_at, pool):
    # One request at a time, 100 ms each; 8 users give up after 250 ms and send again (32/s against 10/s): the server
    # is left with a queue of seconds of requests nobody waits for.
    endpoint = endpoint_at(service_ms=100, serial=1)
    busy = PointConfig(op="embed", concurrency=8, warmup_s=0.0, duration_s=1.0, timeout_s=0.25)
    first = measure_point(endpoint, busy, inline_workload(), pool)
    assert first.requests.errors.get("timeout", 0) > 0  # the backlog was there
    drain = first.drain
    assert drain is not None and drain.idle
    assert drain.probe_ms <= DRAIN_FACTOR * drain.idle_probe_ms + 1000 * DRAIN_SLACK_S
    # The next point starts on an idle server: one user at 100 ms each never waits past CALM_TIMEOUT_S. Without the
    # drain its first requests waited behind the backlog (~22 abandoned requests, ~2 s) and timed out.
    calm = PointConfig(op="embed", concurrency=1, warmup_s=0.0, duration_s=0.5, timeout_s=CALM_TIMEOUT_S)
    second = measure_point(endpoint, calm, inline_workload(), pool)
    assert second.requests.errors == {} and second.requests.ok > 0
    _valid(first)


@pytest.mark.slow  # a server that stops answering, waited for up to the point's timeout
def test_a_drain_that_does_not_end_is_said(endpoint_at, pool):
    endpoint = endpoint_at(service_ms=1, hang_after=10)  # 10 answers, then none (the drain probes too)
    point = PointConfig(op="embed", concurrency=1, warmup_s=0.0, duration_s=0.5, timeout_s=0.5)
    record = measure_point(endpoint, point, inline_workload(), pool)
    assert record.drain is not None and not record.drain.idle
    assert "still busy" in drain_line(record)


# --- quantiles on too few answers ----------------------------------------------------------------------


def _histogram(n: int) -> HdrHistogram:
    h = histograms.new_histogram()
    for i in range(n):
        h.record_value(1000 * (i + 1))
    return h


@pytest.mark.parametrize(
    ("count", "present"),
    [
        (1, set()),
        (3, {"p50"}),
        (10, {"p50", "p90"}),
        (100, {"p50", "p90", "p99"}),
        (1000, {"p50", "p90", "p99", "p999"}),
    ],
)
def test_a_quantile_on_fewer_answers_than_it_needs_is_null(count, present):
    summary = histograms.summary_ms(_histogram(count))
    assert summary.count == count and summary.max == pytest.approx(count, rel=0.001)
    assert {k for k in histograms.MIN_SAMPLES if getattr(summary, k) is not None} == present


def test_the_console_shows_insufficient_not_a_number(endpoint_at, pool):
    endpoint = endpoint_at(service_ms=1)
    point = PointConfig(op="embed", concurrency=1, warmup_s=0.0, duration_s=None, requests=3, timeout_s=5.0)
    record = measure_point(endpoint, point, inline_workload(), pool)
    assert record.requests.ok == 3 and record.latency_ms.service.p99 is None and record.latency_ms.service.p50
    assert record.histograms["service"]  # the histogram is kept
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(summary_table([record]))
    assert "insufficient (n=3)" in console.export_text()
    _valid(record)


def test_quantile_text_names_the_count():
    block = LatencySummary(p50=1.0, p90=None, p99=None, p999=None, max=2.0, mean=1.5, count=4)
    assert histograms.quantile_text(block, "p50", 2) == "1.00"
    assert histograms.quantile_text(block, "p99") == "insufficient (n=4)"
    assert histograms.quantile_text(None, "p99") == "-"


# --- an open loop behind its schedule ------------------------------------------------------------------


def test_judge_compares_with_the_scheduled_count_not_the_nominal_rate():
    # 2/s Poisson over 10 s scheduled 10 sends, all answered within the window: ok, though 10 < 2 x 10.
    kept_up = LoadRequests(sent=10, ok=10, errors={}, scheduled=10, scheduled_s=10.0)
    assert judge(kept_up, 0.001, Window(10.0, 10.05)) == (OK, None)
    # 16/s offered, 160 scheduled, all answered, but over 16 s: 10/s achieved.
    behind = LoadRequests(sent=160, ok=160, errors={}, scheduled=160, scheduled_s=10.0)
    status, problem = judge(behind, 0.001, Window(10.0, 16.0))
    assert status == BEHIND and "160 sends scheduled in 10 s (16.0/s)" in problem and "(10.0/s)" in problem


@pytest.mark.slow  # an open loop past the server's capacity, by design
def test_an_open_loop_past_capacity_is_behind_and_one_within_it_is_ok(endpoint_at, pool):
    endpoint = endpoint_at(service_ms=50, serial=1)  # 20 requests/s at most
    over = PointConfig(
        op="embed", loop="open", rate=40.0, arrival=Arrival("constant"), warmup_s=0.0, duration_s=1.0, timeout_s=5.0
    )
    record = measure_point(endpoint, over, inline_workload(), pool)
    assert record.requests.scheduled == 40 and record.requests.errors == {}
    assert record.status == BEHIND, record.problem
    _valid(record)
    under = PointConfig(
        op="embed",
        loop="open",
        rate=4.0,
        arrival=Arrival("poisson"),
        warmup_s=0.0,
        duration_s=2.0,
        seed=0,
        timeout_s=5.0,
    )
    record = measure_point(endpoint, under, inline_workload(), pool)
    assert record.requests.scheduled == open_schedule(Arrival("poisson"), 4.0, 2.0, None, 0).size
    assert record.status == OK, record.problem


# --- the per-request CSV -------------------------------------------------------------------------------


def test_requests_csv_has_one_row_per_measured_request(load_server, tmp_path):
    url, _ = load_server(service_ms=2)
    sweep = SweepConfig(
        PointConfig(op="embed", duration_s=0.5, warmup_s=0.2, timeout_s=5.0, rate=None),
        concurrencies=[2],
    )
    rows_path = tmp_path / "requests.csv"
    run_load(
        [parse_endpoint_spec(f"t=tei@{url}")], plan_sweep(sweep, rows_path), inline_workload(), Output(tmp_path / "out")
    )
    point = read_results(tmp_path / "out" / "results.jsonl").load_points[0]
    rows = list(csv.DictReader(rows_path.open()))
    assert len(rows) == point.requests.sent > 0
    assert {r["point"] for r in rows} == {"closed batch 1 conc 2"} and {r["outcome"] for r in rows} == {"ok"}
    for r in rows:
        assert r["intended_s"] == ""  # the closed loop has no intended times
        assert 0.2 <= float(r["sent_s"]) <= float(r["end_s"])  # measured: sent after the warm-up
        assert r["texts"] == "1" and int(r["tokens"]) == 3  # the server's count (x-compute-tokens: 3 per text)


def test_requests_csv_of_an_open_loop_has_intended_times(load_server, tmp_path):
    url, _ = load_server(service_ms=2)
    sweep = SweepConfig(
        PointConfig(op="embed", duration_s=0.5, warmup_s=0.0, timeout_s=5.0, arrival=Arrival("constant")),
        rates=[20.0],
    )
    rows_path = tmp_path / "requests.csv"
    run_load(
        [parse_endpoint_spec(f"t=tei@{url}")], plan_sweep(sweep, rows_path), inline_workload(), Output(tmp_path / "out")
    )
    rows = list(csv.DictReader(rows_path.open()))
    intended = sorted(float(r["intended_s"]) for r in rows)
    schedule = open_schedule(Arrival("constant"), 20.0, 0.5, None, 0)
    assert intended == pytest.approx(schedule.tolist(), abs=1e-6)  # the schedule, exactly
    assert read_results(tmp_path / "out" / "results.jsonl").load_points[0].requests.scheduled == len(schedule)
    assert all(float(r["sent_s"]) >= float(r["intended_s"]) for r in rows)


def test_requests_csv_in_a_missing_folder_is_a_user_error(tmp_path):
    request = LoadRequest(["t=tei@http://127.0.0.1:9"], tmp_path, requests_csv=tmp_path / "nope" / "r.csv")
    with pytest.raises(UserError, match="--requests-csv"):
        check_load(request)


def test_requests_csv_never_replaces_a_users_file_and_an_earlier_export_only_with_overwrite(tmp_path):
    def check(path, overwrite=False):
        check_load(LoadRequest(["t=tei@http://127.0.0.1:9"], tmp_path, requests_csv=path, overwrite=overwrite))

    users = tmp_path / "texts.txt"
    users.write_text("a user's texts\n")
    for overwrite in (False, True):
        with pytest.raises(UserError, match="--requests-csv"):
            check(users, overwrite)
    assert users.read_text() == "a user's texts\n"
    earlier = tmp_path / "rows.csv"
    earlier.write_text("endpoint,point,repeat,worker,index,intended_s,sent_s,end_s,outcome,texts,tokens\n")
    with pytest.raises(UserError, match="--overwrite"):
        check(earlier)
    check(earlier, overwrite=True)
    check(tmp_path / "new.csv")


def test_rates_typed_apart_are_labelled_apart_in_points_history_and_compare():
    """`load --rate 5.0000001,5.0000002`: `:g` called both "5/s", so the report, compare and history named two
    measurements as one."""
    from dataclasses import replace

    from bench.history.series import point_configuration
    from bench.load.points import PointKey, point_label
    from bench.results.schema import Loop
    from tests.gate.helpers import load_point

    points = [
        replace(load_point(), loop=Loop.OPEN, rate=rate, arrival="poisson", concurrency=None)
        for rate in (5.0000001, 5.0000002, 5.0, 0.25)
    ]
    labels = [point_label(p) for p in points]
    assert labels == [
        "open batch 8 5.0000001/s poisson",
        "open batch 8 5.0000002/s poisson",
        "open batch 8 5/s poisson",
        "open batch 8 0.25/s poisson",
    ]
    assert len({PointKey.of(p).label for p in points}) == len({point_configuration(p) for p in points}) == 4


def test_a_point_the_machine_held_back_is_said_busy_beside_the_table():
    """Issue 45: a point whose client's loop woke past a tenth of its median answer is named BUSY with the host's
    figures; a carried one is not named."""
    from bench.commands.load_console import busy_line
    from bench.core.machine import MachineView
    from tests.gate.helpers import load_point

    calm = load_point(p99_ms=40.0, client_extra={"loop_lag_p99_ms": 1.5})  # p50 20 ms: 5 ms tolerated
    assert busy_line(calm) is None
    stalled = load_point(p99_ms=40.0, client_extra={"loop_lag_p99_ms": 180.0})
    stalled.machine = MachineView(cores=2, load_start=9.0, load_end=12.5, busy_percent=100.0, steal_percent=0.0)
    line = busy_line(stalled)
    assert line is not None and line.startswith("BUSY: tei embed closed batch 8 conc 4: this machine was too busy")
    assert "load 12.5 on 2 cores" in line
