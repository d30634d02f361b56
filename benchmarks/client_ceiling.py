"""The load client's ceiling against wrk, in one run (issue 48): nginx answering OpenAI's embedding shape on
loopback (benchmarks/nginx_embed.py), closed loop, 64 in flight, batch 1; wrk -t1 -c64, ragbench 1 worker and
ragbench 2 workers alternating, so the machine's drift falls on all three alike.

    PYTHONPATH=. .venv/bin/python benchmarks/client_ceiling.py [--seconds 10] [--repeats 3] [--dim 4]

Needs nginx and wrk (`apt-get install -y nginx wrk`). Prints every run (req/s, the client's CPU per request and
cpu %), then per client the median and range, each ragbench median as a share of wrk's, 2 workers ÷ 1, and the
load average before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from concurrent.futures import Executor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from nginx_embed import MODEL, nginx_embed  # noqa: E402
from runner import load_average, wrk_post  # noqa: E402

from bench.endpoints.spec import parse_endpoint_spec  # noqa: E402
from bench.load.endpoint import LoadEndpoint  # noqa: E402
from bench.load.measure import measure_point  # noqa: E402
from bench.load.points import PointConfig  # noqa: E402
from bench.load.pool import stop_pool, worker_pool  # noqa: E402
from bench.load.workload import Workload  # noqa: E402
from bench.results.schema import Op  # noqa: E402

USERS = 64
BODY = json.dumps({"model": MODEL, "input": ["hello"], "encoding_format": "float"})


def tiny_workload() -> Workload:
    return Workload(["hello"], ["hello"], "one word", lambda ts: [1 for _ in ts], "words")


def wrk(url: str, seconds: float) -> tuple[float, str]:
    out = wrk_post(url, BODY, seconds, USERS)
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return float(match.group(1)) if match else 0.0, f"non-2xx {errors.group(1)}" if errors else ""


def ragbench(endpoint: LoadEndpoint, workers: int, seconds: float, pool: Executor) -> tuple[float, str]:
    point = PointConfig(
        op="embed", loop="closed", batch=1, concurrency=USERS, duration_s=seconds, warmup_s=1.0, workers=workers
    )
    record = measure_point(endpoint, point, tiny_workload(), pool)
    c = record.client
    bad = sum(record.requests.errors.values())
    said = f"cpu/request {c.cpu_per_request_us} µs, cpu {c.cpu_percent}% a worker"
    said += f", validated {record.requests.validated}"
    return record.throughput.requests_per_s, said + (f", ERRORS {record.requests.errors}" if bad else "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dim", type=int, default=4, help="the answer's vector dimension")
    parser.add_argument("--port", type=int, default=18090)
    args = parser.parse_args()
    print(f"load average at start: {load_average()} ({os.cpu_count()} cores)")
    rates: dict[str, list[float]] = {"wrk": [], "ragbench 1 worker": [], "ragbench 2 workers": []}
    one, two = worker_pool(1), worker_pool(2)
    try:
        with nginx_embed(args.port, args.dim) as server:
            endpoint = LoadEndpoint(parse_endpoint_spec(f"nginx=openai@{server.openai_base}?model={MODEL}"))
            endpoint.preflight(Op.EMBED, 10.0)
            url = f"{server.openai_base}/embeddings"
            runs = {
                "wrk": lambda: wrk(url, args.seconds),
                "ragbench 1 worker": lambda: ragbench(endpoint, 1, args.seconds, one),
                "ragbench 2 workers": lambda: ragbench(endpoint, 2, args.seconds, two),
            }
            for repeat in range(args.repeats):
                for name, run in runs.items():
                    before = load_average()
                    rate, said = run()
                    rates[name].append(rate)
                    print(f"  {repeat + 1} {name:<19} {rate:>9,.0f} req/s  {said}  (load {before} -> {load_average()})")
            endpoint.close()
    finally:
        stop_pool(one)
        stop_pool(two)
    summary(rates)
    print(f"load average at end: {load_average()}")


def summary(rates: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, values in rates.items():
        share = f"  = {median[name] / median['wrk']:.0%} of wrk" if name != "wrk" and median["wrk"] else ""
        print(f"{name:<19} median {median[name]:>9,.0f} req/s (range {min(values):,.0f}-{max(values):,.0f}){share}")
    if median["ragbench 1 worker"]:
        print(f"2 workers / 1 worker: {median['ragbench 2 workers'] / median['ragbench 1 worker']:.2f}x")


if __name__ == "__main__":
    main()
