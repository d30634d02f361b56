"""Coordinated omission, measured: a server that stalls 250 ms every 1,250 ms, driven at 200 requests/s.

Analytic truth for uniform arrivals: a request arriving u ms into a stall of T ms waits T - u, then
takes the service time S; the slowest 1% of all requests are those arriving in the first
T - (x - S) ms of a stall with (T + S - x) / P = 0.01, so p99 = T - 0.01 P + S.
The stall is long so that the margins (10% below, 40% above: see the test) stay far from what a
broken measurement gives; the benchmark (benchmarks/bench_load.py) times the issue's 100 ms / 500 ms / 400 req/s case.
"""

from __future__ import annotations

import pytest

from bench.endpoints.spec import parse_endpoint_spec
from bench.load.endpoint import LoadEndpoint
from bench.load.measure import measure_point
from bench.load.points import PointConfig
from bench.load.schedule import Arrival
from tests.load.conftest import inline_workload

STALL_MS, PERIOD_MS, SERVICE_MS, RATE = 250.0, 1250.0, 2.0, 200.0
TRUTH_P99_MS = STALL_MS - 0.01 * PERIOD_MS + SERVICE_MS  # 239.5 ms
PERIODS = 5


@pytest.fixture
def stalling(load_server):
    url, _ = load_server(service_ms=SERVICE_MS, stall_ms=STALL_MS, period_ms=PERIOD_MS)
    endpoint = LoadEndpoint(parse_endpoint_spec(f"stall=tei@{url}"))
    yield endpoint
    endpoint.close()


@pytest.mark.slow  # a measured load run of several seconds
@pytest.mark.parametrize("cap", [None, 8])
def test_open_loop_scheduled_p99_matches_the_stall_truth(stalling, pool, cap):
    point = PointConfig(
        op="embed",
        loop="open",
        batch=1,
        rate=RATE,
        arrival=Arrival("constant"),
        max_inflight=cap,
        duration_s=PERIODS * PERIOD_MS / 1000,
        warmup_s=0.5,
    )
    record = measure_point(stalling, point, inline_workload(), pool)
    scheduled = record.latency_ms.scheduled.p99
    assert record.requests.errors == {} and record.requests.unsent == 0
    assert record.requests.ok == pytest.approx(RATE * PERIODS * PERIOD_MS / 1000, abs=2)
    # Below the truth by at most 10%: a busy machine only adds time, so a p99 that leaves out the stall's wait
    # (the omission this test is for) falls under this bound at any load. Above by at most 40% (96 ms): a late client
    # or server adds to every latency; two CPU-bound neighbours on both cores measured +54 ms (loop lag p99 34 ms),
    # and a stall counted twice (~480 ms) still fails.
    assert -0.10 * TRUTH_P99_MS <= scheduled - TRUTH_P99_MS <= 0.40 * TRUTH_P99_MS, (scheduled, record.client)
    if cap:
        # Most of a stall's requests wait in the client: dispatch delay carries the stall, scheduled still sees it
        # whole. A lower bound: a busy machine only adds delay; a dispatch that left the stall out is near 0.
        assert record.latency_ms.dispatch_delay.p99 > STALL_MS / 2
    # The server's own split, from its x-queue-time headers, sees the stall as queueing (a lower bound, which a busy
    # machine only helps: a stall's first request waits nearly all of it; 20% below covers the 5 ms arrival spacing).
    assert record.server_ms.queue.max >= STALL_MS * 0.8
    # The counters' first snapshot is read by a thread when the warm-up ends: on a loaded machine it wakes a few
    # ms late and misses the window's first answer or two (200/s: one per 5 ms), so allow 1% below ok.
    assert record.server_metrics["counters"]['te_request_success{method="batch"}'] >= 0.99 * record.requests.ok


@pytest.mark.slow  # a measured load run of several seconds
def test_closed_loop_under_reports_the_same_stall(stalling, pool):
    point = PointConfig(
        op="embed", loop="closed", batch=1, concurrency=4, duration_s=PERIODS * PERIOD_MS / 1000, warmup_s=0.5
    )
    record = measure_point(stalling, point, inline_workload(), pool)
    service = record.latency_ms.service
    assert record.latency_ms.scheduled is None and record.latency_ms.dispatch_delay is None
    # Each user has one request caught per stall, then waits: the stall is <1% of the samples. The margin: the p99 of
    # the rest is the 2 ms service plus what a busy machine adds (two CPU-bound neighbours: loop lag p99 34 ms), far
    # under half the truth (120 ms); a closed loop that saw the stall in over 1% of its samples would reach it.
    assert service.p99 < TRUTH_P99_MS / 2, service
    assert service.max >= STALL_MS * 0.8  # the stall did happen; the closed loop just sampled it rarely (a lower bound)
