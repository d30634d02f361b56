"""The replay's client ceiling (`load --trace`): how many recorded calls a second one replay worker sends on time,
against the same trivial nginx endpoint as `load`'s ceiling (benchmarks/bench_load.py, docs/load.md), in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/trace_ceiling.py [--seconds 3] [--rates 1000,2000,5000,10000,20000]

Needs nginx and wrk (`apt-get install -y nginx wrk`). Each rate replays a trace of constant gaps (one 5-character
text a call, `seconds` long) through `replay_trace` (load's worker, one route) and prints the achieved calls/s
(calls ÷ the span from the first intended send to the last answer), the share of sends more than 1 ms late
(`behind`), the dispatch delay (intended → sent) p50/p99 and the replay's scheduled p99; then load's own closed-loop
ceiling (1 worker, 64 connections) on the same endpoint. The replay's ceiling: the highest rate achieved within 1%
with ≤ 1% of its sends behind.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import Executor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import NGINX_PORT, ceiling, load_average, tiny_workload  # noqa: E402
from nginx_embed import nginx_embed  # noqa: E402

from bench.endpoints.meter_trace import CallKind, TraceCall  # noqa: E402
from bench.endpoints.spec import parse_endpoint_spec  # noqa: E402
from bench.load.endpoint import LoadEndpoint  # noqa: E402
from bench.load.measure import measure_point  # noqa: E402
from bench.load.points import PointConfig  # noqa: E402
from bench.load.pool import stop_pool, worker_pool  # noqa: E402
from bench.load.schedule import Arrival  # noqa: E402
from bench.load.trace_replay import RouteReplay, TraceSettings, replay_trace  # noqa: E402


def replay_at(endpoint: LoadEndpoint, rate: float, seconds: float) -> RouteReplay:
    calls = [TraceCall(i / rate, "embedding", CallKind.EMBED, (5,)) for i in range(int(rate * seconds))]
    (replay,) = replay_trace({"embedding": endpoint}, calls, TraceSettings(1.0, 1, 10.0), tiny_workload(), worker_pool)
    return replay


def line(rate: float, replay: RouteReplay) -> tuple[str, bool]:
    intended, sent, end = (np.asarray(x) for x in (replay.intended_s, replay.sent_s, replay.end_s))
    ok = sum(o == "ok" for o in replay.outcomes)
    achieved = ok / float(end.max() - intended.min())
    behind = replay.behind / len(intended)
    delay_ms = (sent - intended) * 1000
    on_time = achieved >= 0.99 * rate and behind <= 0.01
    text = (
        f"   {rate:>7,.0f} offered: {achieved:>8,.0f} achieved ({ok} ok of {len(intended)}), behind {behind:.1%}, "
        f"dispatch p50 {np.percentile(delay_ms, 50):.3f} ms p99 {np.percentile(delay_ms, 99):.3f} ms, "
        f"scheduled p99 {np.percentile(replay.latencies_s, 99) * 1000:.2f} ms{'' if on_time else '  (not kept)'}"
    )
    return text, on_time


def open_loop_line(endpoint: LoadEndpoint, rate: float, seconds: float, pool: Executor) -> str:
    """`load --rate RATE` (constant arrivals, one worker) on the same endpoint: what the replay is measured against."""
    point = PointConfig(
        op="embed", loop="open", batch=1, rate=rate, arrival=Arrival("constant"), duration_s=seconds, warmup_s=1.0
    )
    record = measure_point(endpoint, point, tiny_workload(), pool)
    d = record.latency_ms.dispatch_delay
    delay = f"dispatch p50 {d.p50:.3f} ms p99 {d.p99:.3f} ms" if d is not None and d.p99 is not None else "no dispatch"
    return f"   {rate:>7,.0f} offered: {record.throughput.requests_per_s:>8,.0f} achieved, {delay}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rates", default="1000,2000,5000,10000,20000")
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    with nginx_embed(NGINX_PORT) as server:
        url = server.tei_base
        endpoint = LoadEndpoint(parse_endpoint_spec(f"nginx=tei@{url}"))
        print("replay (load --trace), 1 route = 1 worker, open loop, against nginx on loopback")
        kept = 0.0
        for rate in (float(r) for r in args.rates.split(",")):
            text, on_time = line(rate, replay_at(endpoint, rate, args.seconds))
            kept = max(kept, rate) if on_time else kept
            print(text, flush=True)
        print(f"   replay ceiling: {kept:,.0f} calls/s kept on time")
        one = worker_pool(1)
        try:
            print("load's own open loop (--rate, constant arrivals), 1 worker, the same offered rates")
            for rate in (float(r) for r in args.rates.split(",")):
                print(open_loop_line(endpoint, rate, args.seconds, one), flush=True)
            rate, client = ceiling(endpoint, 1, args.seconds, one)
        finally:
            stop_pool(one)
        print(f"load's closed-loop ceiling, 1 worker (uvloop), 64 connections: {rate:,.0f} req/s   {client}")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    main()
