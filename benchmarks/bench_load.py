"""Figures for `ragbench load` (docs/load.md): the client's ceiling, open-loop timing, a stall's p99.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_load.py [--seconds 5]

Needs nginx and wrk (`apt-get install -y nginx wrk`). Prints, with the machine's load average:
1. the client ceiling against nginx on loopback (benchmarks/nginx_embed.py: POST /embed, batch 1, a 4-float answer):
   httpx AsyncClient, then this client on the default asyncio loop, on uvloop, with 2 workers, and wrk
   (-t1 -c64) on the same endpoint in the same run;
2. dispatch delay (intended -> actual send) at 1,000 requests/s against the same endpoint, and what one
   worker achieves in open loop at 5,000 / 10,000 / 20,000 requests/s;
3. the issue's stall (100 ms every 500 ms, 2 ms service, 400 requests/s): open-loop `scheduled` p99
   against the analytic truth (stall - 1% of the period + service), without and with an in-flight cap,
   and what a closed loop reports on the same server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from nginx_embed import nginx_embed  # noqa: E402
from runner import fixture_server, load_average, wrk_post  # noqa: E402

from bench.endpoints.spec import parse_endpoint_spec  # noqa: E402
from bench.load import worker  # noqa: E402
from bench.load.endpoint import LoadEndpoint  # noqa: E402
from bench.load.measure import measure_point  # noqa: E402
from bench.load.points import PointConfig  # noqa: E402
from bench.load.pool import stop_pool, worker_pool  # noqa: E402
from bench.load.schedule import Arrival  # noqa: E402
from bench.load.shares import share_plans  # noqa: E402
from bench.load.workload import Workload  # noqa: E402

BODY = b'{"inputs":["hello"]}'
USERS = 64
NGINX_PORT = 18080  # the trivial endpoint's port, as before nginx_embed served it


def tiny_workload() -> Workload:
    return Workload(["hello"], ["hello"], "one word", lambda ts: [1 for _ in ts], "words")


def httpx_ceiling(url: str, seconds: float) -> float:
    import httpx

    async def run() -> int:
        done = 0
        stop = time.perf_counter() + seconds
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=USERS)) as client:

            async def user() -> None:
                nonlocal done
                while time.perf_counter() < stop:
                    await client.post(f"{url}/embed", content=BODY, headers={"content-type": "application/json"})
                    done += 1

            await asyncio.gather(*(user() for _ in range(USERS)))
        return done

    return asyncio.run(run()) / seconds


def ceiling(endpoint: LoadEndpoint, workers: int, seconds: float, executor, loop: str = "uvloop") -> tuple[float, dict]:
    point = PointConfig(
        op="embed", loop="closed", batch=1, concurrency=USERS, duration_s=seconds, warmup_s=1.0, workers=workers
    )
    if loop == "asyncio":  # the same client on the default event loop, in this process
        from time import perf_counter

        plans = share_plans(endpoint, point, tiny_workload(), perf_counter() + 0.1)
        with asyncio.Runner() as runner:
            share = runner.run(worker._run(plans[0]))
        return share.ok / seconds, {"cpu_percent": round(100 * share.cpu_s / share.wall_s, 1)}
    record = measure_point(endpoint, point, tiny_workload(), executor)
    return record.throughput.requests_per_s, record.client


def wrk_ceiling(url: str, seconds: float) -> float:
    out = wrk_post(f"{url}/embed", BODY.decode(), seconds, USERS)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def open_point(rate: float, seconds: float, cap: int | None = None, warmup_s: float = 1.0) -> PointConfig:
    """An open-loop point at `rate` requests/s (constant arrivals), batch 1."""
    return PointConfig(
        op="embed",
        loop="open",
        batch=1,
        rate=rate,
        arrival=Arrival("constant"),
        max_inflight=cap,
        duration_s=seconds,
        warmup_s=warmup_s,
    )


def client_ceilings(endpoint: LoadEndpoint, url: str, seconds: float, one, two) -> None:
    """Section 1: closed-loop ceilings of httpx, this client (asyncio, uvloop, 2 workers) and wrk."""
    print("\n1. client ceiling, closed loop, 64 connections, batch 1, against nginx on loopback")
    print(f"   httpx AsyncClient (1 process):        {httpx_ceiling(url, seconds):>9,.0f} req/s")
    rate, client = ceiling(endpoint, 1, seconds, one, "asyncio")
    print(f"   ragbench client, asyncio loop:        {rate:>9,.0f} req/s   cpu {client.cpu_percent}%")
    per_worker, client = ceiling(endpoint, 1, seconds, one)
    print(f"   ragbench client, uvloop, 1 worker:    {per_worker:>9,.0f} req/s   {client}")
    both, client = ceiling(endpoint, 2, seconds, two)
    print(
        f"   ragbench client, uvloop, 2 workers:   {both:>9,.0f} req/s   {client}  "
        f"({both / per_worker:.2f}x one worker)"
    )
    wrk = wrk_ceiling(url, seconds)
    print(f"   wrk -t1 -c64 (same endpoint):         {wrk:>9,.0f} req/s   (1 worker = {per_worker / wrk:.2f} of wrk)")


def open_loop_timing(endpoint: LoadEndpoint, seconds: float, one) -> None:
    """Section 2: dispatch delay at 1,000 requests/s, then achieved against offered at higher rates."""
    print("\n2. open loop at 1,000 req/s (constant), 1 worker, against nginx")
    record = measure_point(endpoint, open_point(1000.0, seconds), tiny_workload(), one)
    d = record.latency_ms.dispatch_delay
    print(
        f"   dispatch delay p50 {d.p50:.3f} ms, p90 {d.p90:.3f} ms, p99 {d.p99:.3f} ms, "
        f"max {d.max:.2f} ms; client {record.client}"
    )
    print("\n   open loop, 1 worker: achieved / offered (constant arrivals)")
    for rate in (5000.0, 10000.0, 20000.0):
        record = measure_point(endpoint, open_point(rate, seconds), tiny_workload(), one)
        d = record.latency_ms.dispatch_delay
        print(
            f"   {rate:>8,.0f} offered: {record.throughput.requests_per_s:>9,.0f} achieved, "
            f"dispatch p50 {d.p50:.2f} ms, "
            f"p99 {d.p99:.1f} ms, cpu {record.client.cpu_percent}%"
        )


def stall_p99(seconds: float, one) -> None:
    """Section 3: the issue's stall, open loop (without and with a cap) against the truth, then closed loop."""
    print("\n3. stall 100 ms every 500 ms, service 2 ms, 400 req/s (truth: p99 = 100 - 5 + 2 = 97 ms)")
    options = ("--service-ms", "2", "--stall-ms", "100", "--period-ms", "500")
    with fixture_server(18600, *options) as url:
        stall = LoadEndpoint(parse_endpoint_spec(f"stall=tei@{url}"))
        seconds = max(5.0, round(seconds / 0.5) * 0.5)  # whole periods
        for cap in (None, 16):
            r = measure_point(stall, open_point(400.0, seconds, cap, warmup_s=0.5), tiny_workload(), one)
            p99 = r.latency_ms.scheduled.p99
            print(
                f"   open loop, cap {cap or 'none':>4}: scheduled p99 {p99:6.1f} ms "
                f"({(p99 - 97) / 97:+.1%} of truth), service p99 {r.latency_ms.service.p99:.1f} ms, "
                f"dispatch p99 {r.latency_ms.dispatch_delay.p99:.1f} ms, "
                f"loop lag p99 {r.client.loop_lag_p99_ms} ms"
            )
        point = PointConfig(op="embed", loop="closed", batch=1, concurrency=4, duration_s=seconds, warmup_s=0.5)
        r = measure_point(stall, point, tiny_workload(), one)
        print(
            f"   closed loop, 4 users:  service p99 {r.latency_ms.service.p99:6.1f} ms (the stall hidden), "
            f"max {r.latency_ms.service.max:.1f} ms"
        )
        stall.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    print(f"load average at start: {load_average()} ({os.cpu_count()} cores)")
    one, two = worker_pool(1), worker_pool(2)
    try:
        with nginx_embed(NGINX_PORT) as server:
            url = server.tei_base
            endpoint = LoadEndpoint(parse_endpoint_spec(f"nginx=tei@{url}"))
            client_ceilings(endpoint, url, args.seconds, one, two)
            open_loop_timing(endpoint, args.seconds, one)
            endpoint.close()
        stall_p99(args.seconds, one)
    finally:
        stop_pool(one)
        stop_pool(two)
    print(f"\nload average at end: {load_average()}")


if __name__ == "__main__":
    main()
