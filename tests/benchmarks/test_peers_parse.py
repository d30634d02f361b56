"""benchmarks/peers_parse.py: each tool's own output read into one shape (docs/peers.md). The samples are outputs of
the pinned versions (wrk 4.1.0, Locust 2.47.0, AIPerf 0.13.0, ragbench's results.jsonl), cut to what is read."""

from __future__ import annotations

import json

import pytest

from benchmarks.peers_parse import (
    parse_locust_failures,
    parse_locust_stats,
    parse_ragbench,
    parse_wrk,
    wrk_duration_ms,
)

WRK = """Running 1s test @ http://127.0.0.1:38337/embed
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.14ms    4.55ms  28.70ms   87.53%
    Req/Sec    59.54k    63.09k  159.96k    80.00%
  Latency Distribution
     50%   42.00us
     75%    1.60ms
     90%    8.30ms
     99%   20.94ms
  59546 requests in 1.04s, 9.82MB read
  Socket errors: connect 0, read 3, write 0, timeout 7
  Non-2xx or 3xx responses: 5
Requests/sec:  57190.99
Transfer/sec:      9.44MB
"""


def test_wrk_summary_and_percentiles():
    result = parse_wrk(WRK)
    assert result.requests_per_s == pytest.approx(57190.99)
    assert result.requests == 59546
    assert result.p50_ms == pytest.approx(0.042)  # microseconds converted, not read as ms
    assert result.p99_ms == pytest.approx(20.94)
    assert result.errors_by_class == {"read": 3, "timeout": 7, "non-2xx": 5}
    assert result.errors == 15


def test_wrk_without_a_rate_is_refused():
    with pytest.raises(ValueError, match="Requests/sec"):
        parse_wrk("unable to connect to 127.0.0.1:1 Connection refused")


@pytest.mark.parametrize(("text", "ms"), [("812.00us", 0.812), ("1.20ms", 1.2), ("2.01s", 2010.0), ("1.5m", 90_000.0)])
def test_wrk_durations(text, ms):
    assert wrk_duration_ms(text) == pytest.approx(ms)


LOCUST_STATS = (
    "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,Min Response Time,"
    "Max Response Time,Average Content Size,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%\n"
    "POST,/v1/embeddings,1990,2,3,41.5,1.2,205.3,150.0,199.1,0.2,3,4,4,5,8,190,200,203,205,205,205\n"
    ",Aggregated,1990,2,3,41.5,1.2,205.3,150.0,199.1,0.2,3,4,4,5,8,190,200,203,205,205,205\n"
)


def test_locust_aggregated_row():
    result = parse_locust_stats(LOCUST_STATS)
    assert (result.requests, result.errors) == (1990, 2)
    assert result.requests_per_s == pytest.approx(199.1)
    assert (result.p50_ms, result.p95_ms, result.p99_ms) == (3.0, 190.0, 203.0)


def test_locust_without_an_aggregated_row_is_refused():
    with pytest.raises(ValueError, match="Aggregated"):
        parse_locust_stats(LOCUST_STATS.splitlines()[0] + "\n")


def test_locust_failures_by_message():
    text = "Method,Name,Error,Occurrences\nPOST,/v1/embeddings,\"HTTPError('429')\",4\nPOST,/v1/embeddings,Timeout,1\n"
    assert parse_locust_failures(text) == {"HTTPError('429')": 4, "Timeout": 1}


def ragbench_point(scheduled: dict | None, server_count: int) -> str:
    latency = {"p50": 2.0, "p90": 3.0, "p99": 9.0, "p999": 9.5, "max": 10.0, "mean": 2.5, "count": 100}
    point = {
        "record": "load_point",
        "requests": {"sent": 103, "ok": 100, "errors": {"http_429": 3}, "unsent": 0},
        "throughput": {"requests_per_s": 99.0, "texts_per_s": 198.0, "tokens_per_s": 990.0},
        "latency_ms": {"service": latency, "scheduled": scheduled, "dispatch_delay": None},
        "server_ms": {"queue": {**latency, "count": server_count}},
    }
    return json.dumps({"record": "run"}) + "\n" + json.dumps(point) + "\n"


def test_ragbench_open_loop_reads_the_scheduled_latency():
    scheduled = {"p50": 2.1, "p90": 3.0, "p99": 191.0, "p999": 199.0, "max": 200.0, "mean": 40.0, "count": 100}
    result = parse_ragbench(ragbench_point(scheduled, 100))
    assert result.p99_ms == 191.0  # from the intended send, not the service time's 9.0
    assert (result.requests, result.errors, result.errors_by_class) == (103, 3, {"http_429": 3})
    assert (result.texts_per_s, result.tokens_per_s) == (198.0, 990.0)
    assert result.server_timing


def test_ragbench_closed_loop_reads_the_service_latency_and_no_server_timing():
    result = parse_ragbench(ragbench_point(None, 0))
    assert result.p99_ms == 9.0
    assert not result.server_timing


def test_ragbench_needs_exactly_one_point():
    with pytest.raises(ValueError, match="one load_point"):
        parse_ragbench(json.dumps({"record": "run"}))


def test_size_answer_and_its_first_failure():
    from benchmarks.peers_parse import parse_size

    sizing = {"record": "sizing", "saturation": {"rate": 12.5, "first_failure": 13.75, "probes": []}}
    jsonl = json.dumps({"record": "run"}) + "\n" + json.dumps(sizing) + "\n"
    assert parse_size(jsonl) == (12.5, "first failure at 13.75/s")
    none = {"record": "sizing", "saturation": {"rate": None, "first_failure": None}}
    assert parse_size(json.dumps(none)) == (None, "no failure decided")


def aiperf_export(errors: list[dict]) -> str:
    """AIPerf 0.13.0's profile_export_aiperf.json, cut to what is read (figures of a real run at 20/s)."""
    latency = {"unit": "ms", "avg": 12.9, "p50": 1.44, "p95": 60.81, "p99": 76.22, "count": 60}
    effective = {"unit": "ms", "avg": 21.8, "p50": 3.08, "p95": 100.73, "p99": 106.78, "count": 60}
    export = {
        "request_throughput": {"unit": "requests/sec", "avg": 19.98},
        "request_latency": latency,
        "request_count": {"unit": "requests", "avg": 60.0},
        "input_token_throughput": {"unit": "tokens/sec", "avg": 39.96},
        "effective_latency": effective,
        "error_summary": errors,
        "telemetry_data": {"summary": {}, "endpoints": {}, "error_summary": []},
        "input_config": {"phases": [{"name": "profiling", "type": "poisson", "duration": 3.0, "rate": 20.0}]},
    }
    return json.dumps(export)


def test_aiperf_export_both_latencies_and_tokens():
    from benchmarks.peers_parse import aiperf_rate, parse_aiperf

    result = parse_aiperf(aiperf_export([]))
    assert result.requests_per_s == pytest.approx(19.98)
    assert (result.requests, result.errors) == (60, 0)
    assert (result.p95_ms, result.p99_ms) == (60.81, 76.22)  # request_latency: from the actual send
    assert result.scheduled_p99_ms == 106.78  # effective_latency: from the credit (the intended send)
    assert result.tokens_per_s == pytest.approx(39.96)
    assert result.texts_per_s is None and not result.server_timing
    assert aiperf_rate(aiperf_export([])) == 20.0


def test_aiperf_errors_by_type_and_no_rate_in_a_closed_loop():
    from benchmarks.peers_parse import aiperf_rate, parse_aiperf

    errors = [{"error_details": {"type": "HTTPStatusError", "code": 429}, "count": 4}]
    result = parse_aiperf(aiperf_export(errors))
    assert (result.errors, result.errors_by_class) == (4, {"HTTPStatusError": 4})
    closed = json.dumps({"input_config": {"phases": [{"type": "concurrency", "concurrency": 64}]}})
    assert aiperf_rate(closed) is None


def guidellm_output(strategies: list[dict], scheduled_p99_s: float | None) -> str:
    """GuideLLM 0.8.1's `--output kind=json`, cut to what is read (latencies in seconds)."""

    def metric(p99: float) -> dict:
        return {"successful": {"count": 119, "percentiles": {"p50": p99 / 4, "p95": p99 / 2, "p99": p99}}}

    benchmarks = [
        {
            "config": {"strategy": strategy},
            "metrics": {
                "request_totals": {"successful": 117, "errored": 2, "incomplete": 0, "total": 119},
                "requests_per_second": {"successful": {"mean": 23.6}},
                "request_latency": metric(0.6),
                "request_scheduled_latency": None if scheduled_p99_s is None else metric(scheduled_p99_s),
                "prompt_tokens_per_second": {"successful": {"mean": 70.8}},
            },
        }
        for strategy in strategies
    ]
    return json.dumps({"benchmarks": benchmarks})


def test_guidellm_seconds_become_ms_and_each_benchmark_keeps_its_rate():
    from benchmarks.peers_parse import parse_guidellm

    strategies = [{"type_": "synchronous"}, {"type_": "poisson", "rate": 12.5}]
    [(first_rate, _), (rate, result)] = parse_guidellm(guidellm_output(strategies, 0.8))
    assert first_rate is None and rate == 12.5
    assert (result.p50_ms, result.p95_ms, result.p99_ms) == pytest.approx((150.0, 300.0, 600.0))
    assert result.scheduled_p99_ms == pytest.approx(800.0)
    assert (result.requests, result.errors, result.errors_by_class) == (119, 2, {"errored": 2})
    assert result.tokens_per_s == pytest.approx(70.8)


def test_guidellm_without_benchmarks_or_scheduled_latency():
    from benchmarks.peers_parse import parse_guidellm

    [(_, result)] = parse_guidellm(guidellm_output([{"type_": "concurrent", "streams": 64}], None))
    assert result.scheduled_p99_ms is None
    with pytest.raises(ValueError, match="no benchmark"):
        parse_guidellm(json.dumps({"benchmarks": []}))
