"""Ingestion's client overhead (docs/endpoints.md): quality's Encoder against `ragbench load`'s closed loop on the
same fast TEI-shaped loopback server (tests/load/fixture_server.py: 2 ms service, answers in parallel), at the
same batch and concurrency. Target: the Encoder reaches >= 80% of load's texts/s.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ingest.py [--texts 20000] [--batch 32] [--concurrency 4]

Prints both rates, their ratio and the machine's load average (the figures are only as quiet as the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.endpoints import open_endpoint, parse_endpoint_spec  # noqa: E402
from bench.targets.encoder import Encoder  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(batch: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    argv = [sys.executable, str(ROOT / "tests/load/fixture_server.py"), "--port", str(port), "--max-batch", str(batch)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc, f"http://127.0.0.1:{port}"


def load_rate(url: str, batch: int, concurrency: int, seconds: int) -> float:
    """texts/s of `ragbench load`'s closed loop (its own process, as a user runs it)."""
    with tempfile.TemporaryDirectory() as out:
        argv = [sys.executable, "-m", "bench", "load", "-e", f"f=tei@{url}", "--batch", str(batch)]
        argv += ["--concurrency", str(concurrency), "--duration", f"{seconds}s", "--out", out]
        subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        for line in (Path(out) / "results.jsonl").read_text().splitlines():
            record = json.loads(line)
            if record.get("record") == "load_point":
                return float(record["throughput"]["texts_per_s"])
    raise SystemExit("ragbench load wrote no load point")


def encoder_rate(url: str, texts: int, batch: int, concurrency: int) -> float:
    encoder = Encoder(
        open_endpoint(parse_endpoint_spec(f"f=tei@{url}?batch={batch}&concurrency={concurrency}")), cache=False
    )
    started = time.perf_counter()
    encoder.embed([f"text number {i}" for i in range(texts)], "ingest")
    wall = time.perf_counter() - started
    encoder.close()
    return texts / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    proc, url = start_server(args.batch)
    try:
        ingest = encoder_rate(url, args.texts, args.batch, args.concurrency)
        load = load_rate(url, args.batch, args.concurrency, args.seconds)
    finally:
        proc.kill()
    load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"batch {args.batch}, concurrency {args.concurrency}, load average {load_avg}")
    print(f"quality ingest (Encoder): {ingest:,.0f} texts/s over {args.texts:,} texts")
    print(f"ragbench load closed loop: {load:,.0f} texts/s over {args.seconds} s")
    print(f"ratio: {ingest / load:.2f} (target >= 0.80)")


if __name__ == "__main__":
    main()
