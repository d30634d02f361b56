"""The load client's cost per request (issue 48): one worker's share run in this process (uvloop, as a worker runs
it) against nginx answering OpenAI's embedding shape on loopback, closed loop, 64 users, a fixed number of
measured requests; prints the CPU per request (user + system, this process only: nginx excluded).

    PYTHONPATH=. .venv/bin/python benchmarks/client_cost.py [--requests 200000] [--repeats 3] [--profile]

`--profile` runs it once under cProfile and prints the functions by own time (cProfile's overhead inflates every
Python call alike: read it for the shares, not the µs). For counts that a busy machine does not move, run it under
callgrind with a small --requests and compare two counts' difference:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out .venv/bin/python benchmarks/client_cost.py \
        --requests 20000 --repeats 1
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import uvloop  # noqa: E402
from client_ceiling import USERS, load_average, tiny_workload  # noqa: E402
from nginx_embed import MODEL, nginx_embed  # noqa: E402

from bench.endpoints.spec import parse_endpoint_spec  # noqa: E402
from bench.load import worker  # noqa: E402
from bench.load.endpoint import LoadEndpoint  # noqa: E402
from bench.load.points import PointConfig  # noqa: E402
from bench.load.share import ShareResult  # noqa: E402
from bench.load.shares import share_plans  # noqa: E402
from bench.results.schema import Op  # noqa: E402


def cpu_times() -> tuple[float, float]:
    """(user, system) CPU seconds of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def one_share(endpoint: LoadEndpoint, requests: int) -> tuple[ShareResult, tuple[float, float]]:
    """(result, (user, system) CPU seconds) of one closed-loop share of `requests` measured requests,
    no warm-up."""
    point = PointConfig(
        op="embed", loop="closed", batch=1, concurrency=USERS, requests=requests, duration_s=None, warmup_s=0.0
    )
    (plan,) = share_plans(endpoint, point, tiny_workload(), time.perf_counter() + 0.05)
    user, system = cpu_times()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result = runner.run(worker._run(plan))
    user_end, system_end = cpu_times()
    return result, (user_end - user, system_end - system)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--port", type=int, default=18091)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {load_average()}")
    with nginx_embed(args.port, args.dim) as server:
        endpoint = LoadEndpoint(parse_endpoint_spec(f"nginx=openai@{server.openai_base}?model={MODEL}"))
        endpoint.preflight(Op.EMBED, 10.0)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            one_share(endpoint, args.requests)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        for _ in range(0 if args.profile else args.repeats):
            result, (user, system) = one_share(endpoint, args.requests)
            per = 1e6 / result.sent
            print(
                f"{result.ok:,} ok of {result.sent:,}, validated {result.validated:,}: "
                f"{result.cpu_s * per:.2f} µs CPU per request in the window, {result.sent / result.wall_s:,.0f} "
                f"req/s ({result.cpu_s / result.wall_s:.0%} of a core); with the histograms' folding after it "
                f"user {user * per:.2f} + system {system * per:.2f} µs (load {load_average()})"
            )
        endpoint.close()


if __name__ == "__main__":
    main()
