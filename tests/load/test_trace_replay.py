"""`load --trace`: the replay's schedule (recorded arrivals scaled by --speed, loops end to end), its synthetic texts,
and the real chain: calls recorded through `ragbench meter --record` in front of a server, replayed against it."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from bench.endpoints.meter import Meter
from bench.endpoints.meter_trace import CallKind, TraceCall, TraceUnit, read_trace
from bench.endpoints.spec import parse_endpoint_spec
from bench.load.endpoint import LoadEndpoint
from bench.load.trace_replay import TraceSettings, replay_plan, synthetic_texts
from bench.sizing.trace_size import PRECISION
from tests.harness.cli import run_cli_captured
from tests.load.conftest import inline_workload

CALLS = [
    TraceCall(10.0, "embedding", CallKind.EMBED, (5, 30)),
    TraceCall(10.5, "embedding", CallKind.EMBED, (12,)),
    TraceCall(12.0, "embedding", CallKind.EMBED, (3, 3, 3)),
]


def test_the_schedule_is_the_recorded_arrivals_divided_by_speed_and_looped():
    endpoint = LoadEndpoint(parse_endpoint_spec("e=tei@http://127.0.0.1:9"))
    plan = replay_plan(endpoint, CALLS, TraceSettings(speed=2.0, loops=2), inline_workload())
    period = 2.0 + 1.0  # the span plus one mean gap: the loop's second pass keeps the spacing
    expected = np.array([0.0, 0.5, 2.0, period, period + 0.5, period + 2.0]) / 2.0
    np.testing.assert_allclose(plan.offsets, expected)
    assert plan.inputs == [2, 1, 3] and len(plan.requests) == 3  # a request a call: index % 3 on the second pass


def test_synthetic_texts_have_the_recorded_lengths():
    workload = inline_workload()
    _, texts = synthetic_texts(workload, TraceCall(0.0, "e", CallKind.EMBED, (1, 17, 400)))
    assert [len(t) for t in texts] == [1, 17, 400]
    query, words = synthetic_texts(workload, TraceCall(0.0, "r", CallKind.RERANK, (4, 9), TraceUnit.TOKENS, query=3))
    assert [len(t.split()) for t in words] == [4, 9] and query is not None and len(query.split()) == 3


# The replayed p50 against the recorded one, both of the same server a few seconds apart in the same test, so a busy
# machine slows both (under two CPU-bound neighbours at load average 17: 44.3 ms replayed, 44.1 ms recorded, against
# ~21 ms of service); 50% covers a neighbour that comes or goes between the two. What it catches: a replayed
# latency read in other units, or from a call's schedule rather than its send (its sizes: texts_identical).
P50_BAND = 0.5


@pytest.mark.slow
def test_a_recorded_trace_replays_against_the_same_server(load_server, tmp_path: Path):
    url, _ = load_server(service_ms=20, per_text_ms=1)
    trace = tmp_path / "trace.jsonl"
    rng = np.random.default_rng(7)
    with Meter({"embedding": url}, record=trace) as meter, httpx.Client(timeout=10) as client:
        start = time.perf_counter()
        due = 0.0
        for _ in range(60):
            due += float(rng.exponential(0.05))
            time.sleep(max(0.0, start + due - time.perf_counter()))
            batch = int(rng.integers(1, 9))
            client.post(f"{meter.url}/embedding/embed", json={"inputs": ["some words here"] * batch})
    calls = read_trace(trace)
    assert len(calls) == 60
    out = tmp_path / "replay"
    code, stdout, stderr = run_cli_captured(
        "load", "-e", f"fx=tei@{url}", "--trace", str(trace), "--route", "embedding=fx", "--out", str(out)
    )
    assert code == 0, stdout + stderr
    (route,) = json.loads((out / "trace-replay.json").read_text())["routes"]
    assert route["calls_replayed"] == 60 and route["texts_identical"] and route["errors"] == 0
    assert route["p50_replayed_ms"] == pytest.approx(route["p50_recorded_ms"], rel=P50_BAND)


# Timing (issue 37). The trace's truth is × 2.5 under any p99 SLO over the 10 ms service: a constant trace waits
# for nothing below capacity (tests/sizing/test_trace_size_truth.py), and past it the queue grows, which the steady
# rule fails. The SLO's headroom over the 10 ms is the scheduling delay the loaded machine may add below capacity:
# with 100 ms, beside four CPU-bound processes on the 2 cores (load average 10.8), × 2 (80% busy) measured a p99
# of 772 ms once in 3 and × 2.38 289 ms, and one run of 3 beside two answered under × 1.25. 1 s covers those.
SLO_P99_MS = 1000
# The answer's floor, a fraction of the capacity: a wrong speed scale (gaps × speed: × 0.4) or a rule that fails a
# steady queue lands under it; at load average 10.8 with a 100 ms SLO the answer was × 2.28 (0.91).
FLOOR_OF_CAPACITY = 0.5


@pytest.mark.slow
def test_size_trace_finds_the_speed_a_serial_server_carries(load_server, tmp_path: Path):
    """One request at a time, 10 ms each: 100 calls/s. A trace of 40 calls/s (constant gaps, imported from CSV)
    fits up to × 2.5; the answer is at most the capacity (no busy machine makes the server faster), at least
    FLOOR_OF_CAPACITY of it, and the bisection's pass and failure are within its precision."""
    url, _ = load_server(service_ms=10, serial=1)
    trace = tmp_path / "gateway.csv"
    rows = [f"{i * 0.025:.3f},embedding,embed,1,chars,40,,200,0.01" for i in range(100)]
    trace.write_text("at,route,kind,texts,unit,lengths,query,status,latency\n" + "\n".join(rows) + "\n")
    out = tmp_path / "size"
    code, stdout, stderr = run_cli_captured(
        "size",
        "-e",
        f"fx=tei@{url}",
        "--trace",
        str(trace),
        "--route",
        "embedding=fx",
        "--slo-p99",
        str(SLO_P99_MS),
        "--target-speed",
        "6x",
        "--max-probes",
        "8",
        "--out",
        str(out),
    )
    assert code == 0, stdout + stderr
    found = json.loads((out / "trace-size.json").read_text())
    assert FLOOR_OF_CAPACITY * 2.5 <= found["max_speed"] <= 2.5, found
    assert found["max_speed"] < found["failed_speed"] <= found["max_speed"] * (1 + PRECISION), found
    assert found["replicas"] == math.ceil(6 / found["max_speed"])
