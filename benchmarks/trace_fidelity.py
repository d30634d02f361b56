"""Replay fidelity of `load --trace`: a trace recorded through `ragbench meter --record` replayed against the same
server; prints per route p50/p99 recorded vs replayed, texts per call and the inter-arrival KS p (nothing asserted).

    PYTHONPATH=. .venv/bin/python benchmarks/trace_fidelity.py [--calls 200] [--rate 20] [--service-ms 20]

The server: tests/load/fixture_server.py (TEI-shaped, requests served in parallel, `service-ms` + 1 ms a text), so
the recording and the replay see the same service time and any difference is the recorder's or the replay's.
The recording: `calls` embed calls, Poisson arrivals at `rate`/s, batches of 1-32 texts of 20-400 characters
(an ingest's bursts and single queries), sent by a client through the meter; then `load --trace` replays it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from bench.endpoints.meter import Meter
from tests.harness.process import free_port

ROOT = Path(__file__).resolve().parents[1]


def record(url: str, trace: Path, calls: int, rate: float) -> None:
    rng = np.random.default_rng(11)
    with Meter({"embedding": url}, record=trace) as meter, httpx.Client(timeout=30) as client:
        start, due = time.perf_counter(), 0.0
        for _ in range(calls):
            due += float(rng.exponential(1 / rate))
            time.sleep(max(0.0, start + due - time.perf_counter()))
            texts = ["x" * int(n) for n in rng.integers(20, 400, int(rng.integers(1, 33)))]
            client.post(f"{meter.url}/embedding/embed", json={"inputs": texts})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--service-ms", type=float, default=20.0)
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, str(ROOT / "tests/load/fixture_server.py"), "--port", str(port)),
            *("--service-ms", str(args.service_ms), "--per-text-ms", "1"),
        ]
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.get(f"{url}/metrics", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        with tempfile.TemporaryDirectory() as folder:
            trace, out = Path(folder) / "trace.jsonl", Path(folder) / "replay"
            record(url, trace, args.calls, args.rate)
            command = [sys.executable, "-m", "bench", "load", "-e", f"fx=tei@{url}", "--trace", str(trace)]
            subprocess.run([*command, "--route", "embedding=fx", "--out", str(out)], check=True)
            print(json.dumps(json.loads((out / "trace-replay.json").read_text()), indent=1))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
