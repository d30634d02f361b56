"""Figures for the foundation's targets; prints them (nothing is asserted).

    .venv/bin/python benchmarks/bench_quality.py            # evaluate + BM25 figure (seconds)
    .venv/bin/python benchmarks/bench_quality.py --demo     # also `ragbench demo`, fresh cache and rerun (minutes)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO / "datasets" / "scifact-train"


def timed(args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def bench_evaluate(workdir: Path) -> None:
    """`ragbench evaluate` of a 300-query run with 100 documents per query, whole process, warm."""
    from bench.datasets import load_dataset

    ds = load_dataset(SCIFACT, "train")
    rng = random.Random(0)
    doc_ids = list(ds.corpus)
    qids = ds.judged_queries()[:300]
    run = workdir / "run300x100.trec"
    with run.open("w") as fh:
        for q in qids:
            docs = rng.sample(doc_ids, 99) + list(ds.qrels[q])[:1]
            for rank, d in enumerate(dict.fromkeys(docs), start=1):
                fh.write(f"{q} Q0 {d} {rank} {100 - rank + rng.random():.6f} bench\n")
    args = [sys.executable, "-m", "bench", "evaluate", str(SCIFACT / "qrels" / "train.tsv"), str(run),
            "-m", "ndcg_cut.10", "-m", "recall.100", "-m", "recip_rank", "-m", "map_cut.100", "-m", "P.10",
            "-m", "bpref", "-m", "Rprec", "-m", "success.10", "-m", "map", "-m", "ndcg"]
    timed(args)  # warm the file cache and bytecode
    times = [timed(args) for _ in range(5)]
    print(f"evaluate 300 queries x 100 docs, 10 measures, whole process: median {statistics.median(times):.3f} s, "
          f"max {max(times):.3f} s (target <= 1 s)")


def bench_bm25() -> None:
    from bench.datasets import load_dataset
    from bench.quality.metrics import evaluate, parse_measure
    from bench.quality.runs import run_from_results
    from bench.targets.base import no_progress
    from bench.targets.local import BM25Engine

    ds = load_dataset(SCIFACT, "train")
    engine = BM25Engine()
    start = time.perf_counter()
    engine.prepare(ds, no_progress)
    results = engine.search({q: ds.queries[q] for q in ds.judged_queries()}, 100, no_progress)
    elapsed = time.perf_counter() - start
    run, _ = run_from_results(results)
    m = [parse_measure("nDCG@10"), parse_measure("R@100")]
    scores = evaluate(ds.qrels, run, m, complete=True).means
    print(f"bm25 full SciFact train: nDCG@10 {scores['ndcg_cut_10']:.4f} (target 0.696 +- 0.02), "
          f"recall@100 {scores['recall_100']:.4f}; index + 809 queries {elapsed:.2f} s")


def bench_demo(workdir: Path) -> None:
    env = {**os.environ, "RAGBENCH_CACHE": str(workdir / "cache")}
    ragbench = [sys.executable, "-m", "bench", "demo", "--out", str(workdir / "demo")]
    fresh = timed(ragbench, env)
    rerun = timed([*ragbench, "--overwrite"], env)
    print(f"ragbench demo: fresh cache {fresh:.1f} s (target <= 180 s), rerun {rerun:.1f} s (target <= 20 s)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--demo", action="store_true", help="also time `ragbench demo` (minutes)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_evaluate(Path(tmp))
        bench_bm25()
        if args.demo:
            bench_demo(Path(tmp))


if __name__ == "__main__":
    main()
