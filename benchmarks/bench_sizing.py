"""Sizing figures, measured and printed (issue 11).

    python benchmarks/bench_sizing.py ceiling [--lengths 16,128] [--batch 1,32] [--rounds 3]
        `ragbench ceiling`'s texts/s against sentence-transformers' own `encode` on the same texts and
        batch (target: within 10%). The two alternate round by round, so load from other processes on a
        shared machine falls on both alike; the median of the rounds is compared.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from bench.endpoints.reference import default_embedding_model
from bench.load.ceiling import CeilingConfig, measure_ceiling
from bench.load.workload import load_workload


def _plain_encode(model, texts: list[str], batch: int, seconds: float) -> float:
    """texts/s of `model.encode` as a user calls it: whole calls, timed until `seconds` have passed."""
    model.encode(texts[:batch], batch_size=batch)
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        model.encode(texts, batch_size=batch, show_progress_bar=False)
        done += len(texts)
    return done / (time.perf_counter() - started)


def bench_ceiling(lengths: list[int], batches: list[int], rounds: int, seconds: float) -> None:
    from sentence_transformers import SentenceTransformer

    path = default_embedding_model()
    model = SentenceTransformer(str(path), device="cpu")
    workload = load_workload(None, None, path)
    print(f"{'length':>6} {'batch':>5} {'ceiling texts/s':>16} {'encode texts/s':>15} {'ratio':>6}")
    for length in lengths:
        texts = workload.with_length(length).texts
        for batch in batches:
            ours, theirs = [], []
            config = CeilingConfig(model=path, batches=(batch,), lengths=(length,), min_seconds=seconds)
            for _ in range(rounds):
                ours.extend(p.texts_per_s for p in measure_ceiling(replace(config)))
                n = max(batch * 3, 64)
                theirs.append(_plain_encode(model, (texts * (n // len(texts) + 1))[:n], batch, seconds))
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{length:>6} {batch:>5} {a:>16.1f} {b:>15.1f} {a / b:>6.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("ceiling")
    c.add_argument("--lengths", default="16,128")
    c.add_argument("--batch", default="1,32")
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    if args.what == "ceiling":
        bench_ceiling([int(v) for v in args.lengths.split(",")], [int(v) for v in args.batch.split(",")],
                      args.rounds, args.seconds)


if __name__ == "__main__":
    main()
