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
from bench.load.histograms import decode, recorded
from bench.load.measure import measure_point
from bench.load.points import PointConfig
from bench.load.schedule import Arrival
from tests.load.conftest import inline_workload

STALL_MS, PERIOD_MS, SERVICE_MS, RATE = 250.0, 1250.0, 2.0, 200.0
TRUTH_P99_MS = STALL_MS - 0.01 * PERIOD_MS + SERVICE_MS  # 239.5 ms
PERIODS = 5
# The scheduled p99's band around the truth. Below: 10% (24 ms), well over the 5 ms spacing of the constant
# arrivals, which the analytic truth (uniform arrivals) leaves out; a busy machine only adds time, so a p99 that
# leaves out the stall's wait (the omission this test is for) falls under it at any load. Above: 40% (96 ms): a late
# client or server adds to every latency; two CPU-bound neighbours on both cores measured +54 ms (loop lag p99
# 34 ms), and a stall counted twice (~480 ms) still fails.
BELOW_TRUTH, ABOVE_TRUTH = 0.10, 0.40
CONCURRENCY = 4  # the closed loop's users
# How late the server-counter snapshot at the warm-up's end may be read: 1% (25 ms) failed at load average 15 under
# two CPU-bound neighbours (20 answers missed, 100 ms late); 250 ms is a few scheduler slices more than that.
SNAPSHOT_LATE_S = 0.25
# A request that waited for a stall: 80% of it, the same lower bound as the open loop's checks. A busy machine's
# delay of a plain 2 ms request stays far under 200 ms (two CPU-bound neighbours: loop lag p99 34 ms).
STALLED_US = 1000 * STALL_MS * 0.8


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
    # Below the truth by at most BELOW_TRUTH, above by at most ABOVE_TRUTH (their margins: see them).
    assert -BELOW_TRUTH * TRUTH_P99_MS <= scheduled - TRUTH_P99_MS <= ABOVE_TRUTH * TRUTH_P99_MS, (
        scheduled,
        record.client,
    )
    if cap:
        # Most of a stall's requests wait in the client: dispatch delay carries the stall, scheduled still sees it
        # whole. A lower bound: a busy machine only adds delay; a dispatch that left the stall out is near 0.
        assert record.latency_ms.dispatch_delay.p99 > STALL_MS / 2
    # The server's own split, from its x-queue-time headers, sees the stall as queueing (a lower bound, which a busy
    # machine only helps: a stall's first request waits nearly all of it; 20% below covers the 5 ms arrival spacing).
    assert record.server_ms.queue.max >= STALL_MS * 0.8
    # The counters' first snapshot is read by a thread when the warm-up ends: a late one misses the window's first
    # answers (one per 5 ms at 200/s). SNAPSHOT_LATE_S bounds how late; counters that missed the window (none
    # counted) still fail.
    counted = record.server_metrics["counters"]['te_request_success{method="batch"}']
    assert counted >= record.requests.ok - RATE * SNAPSHOT_LATE_S, (counted, record.requests)


@pytest.mark.slow  # a measured load run of several seconds
def test_closed_loop_under_reports_the_same_stall(stalling, pool):
    point = PointConfig(
        op="embed",
        loop="closed",
        batch=1,
        concurrency=CONCURRENCY,
        duration_s=PERIODS * PERIOD_MS / 1000,
        warmup_s=0.5,
    )
    record = measure_point(stalling, point, inline_workload(), pool)
    service = record.latency_ms.service
    assert record.latency_ms.scheduled is None and record.latency_ms.dispatch_delay is None
    # Each user has one request caught per stall, then waits: however many requests the rest of the window holds
    # (a busy client sends fewer, so the stall's share of them, and the p99, grow with the machine's load), at most
    # CONCURRENCY x the stalls the window touches waited for a stall. A loop that counted the stall's wait for each
    # scheduled send (the open loop's view) would count ~RATE x STALL_MS (50) requests per stall.
    stalled = sum(count for value_us, count in recorded(decode(record.histograms["service"])) if value_us >= STALLED_US)
    assert 1 <= stalled <= CONCURRENCY * (PERIODS + 1), (stalled, service)  # a window of PERIODS meets PERIODS + 1
    assert service.max >= STALL_MS * 0.8  # the stall did happen; the closed loop just sampled it rarely (a lower bound)
