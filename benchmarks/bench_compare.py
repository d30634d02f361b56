"""`ragbench compare` of two quality results with 1,000 queries x 5 targets (issue 9's target: <= 2 s warm).

Writes two results files with the real writer (4 measures per target, per-query scores shaped like
nDCG's: many zeros, many ones, the rest spread), then times
- the command as CI runs it: `python -m bench compare BASE CUR`, a fresh process, files in the page cache
  (the first run warms the cache and is not counted), median of --repeat runs;
- `compare_paths` alone, in process, after one warm-up call.

    pytest benchmarks/bench_compare.py --benchmark-only [--benchmark-json FILE]   # pytest-benchmark
    python benchmarks/bench_compare.py [--queries 1000] [--targets 5] [--repeat 5]   # the same, printed
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.gate.compare import compare_paths
from bench.gate.config import GateConfig
from bench.results.schema import EndRecord, MetricRecord, QueryRecord, RunHeader, TargetRecord
from bench.results.writer import ResultsWriter

MEASURES = {"ndcg_cut_10": "nDCG@10", "recall_100": "R@100", "recip_rank_cut_10": "MRR@10", "map_cut_100": "MAP@100"}


def header(queries: int, names: list[str]) -> RunHeader:
    """The synthetic quality run's header: `queries` queries, the targets `names`."""
    return RunHeader(
        command="quality",
        created="2026-01-01T00:00:00+00:00",
        ragbench_version="bench",
        dataset={"name": "synthetic", "fingerprint": "f", "documents": 10_000, "queries": queries},
        measures=list(MEASURES),
        measure_labels=MEASURES,
        depth=100,
        seed=0,
        targets=names,
    )


def target_record(name: str, queries: int) -> TargetRecord:
    """A target that answered every query, with nothing else measured."""
    return TargetRecord(
        name=name,
        spec=name,
        status="ok",
        config={},
        index_seconds=0.0,
        search_seconds=0.0,
        queries=queries,
        errors=0,
        empty=0,
        latency_ms={},
        cost={},
        warnings={},
        scores_replaced=False,
        run_file=f"runs/{name}.trec",
    )


def write_results(path: Path, queries: int, targets: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(queries)]
    names = [f"target{t}" for t in range(targets)]
    writer = ResultsWriter(path)
    writer.write(header(queries, names))
    for name in names:
        writer.write(
            target_record(name, queries),
            *[QueryRecord(target=name, qid=q, latency_ms=float(rng.gamma(2, 5)), hits=100) for q in qids],
        )
    for name in names:
        for measure, label in MEASURES.items():
            values = np.where(rng.random(queries) < 0.2, 0.0, np.minimum(1.0, rng.beta(3, 2, queries) * 1.2))
            writer.write(
                MetricRecord(
                    target=name,
                    measure=measure,
                    label=label,
                    mean=float(values.mean()),
                    ci_low=0.0,
                    ci_high=1.0,
                    queries=queries,
                    per_query=dict(zip(qids, values.tolist())),
                )
            )
    writer.write(EndRecord(status="complete", finished="2026-01-01T00:00:01+00:00"))
    writer.close()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _files(folder: Path, queries: int, targets: int) -> tuple[Path, Path]:
    base, cur = folder / "base.jsonl", folder / "cur.jsonl"
    write_results(base, queries, targets, seed=1)
    write_results(cur, queries, targets, seed=2)
    return base, cur


def test_compare_1000_queries_5_targets(benchmark, tmp_path):
    """The command as CI runs it, a fresh process each round; its CPU time goes to extra_info (on a shared
    machine the wall time grows with the load, the CPU time much less)."""
    base, cur = _files(tmp_path, 1000, 5)
    command = [sys.executable, "-m", "bench", "compare", str(base), str(cur)]
    subprocess.run(command, capture_output=True, check=True)  # warms the page cache
    cpus = []

    def once():
        before = _children_cpu()
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        cpus.append(_children_cpu() - before)
        return done

    done = benchmark.pedantic(once, rounds=5, iterations=1)
    checks = sum(1 for line in done.stdout.splitlines() if line[:4] in ("pass", "FAIL"))
    benchmark.extra_info.update(
        checks=checks, cpu_s_median=statistics.median(cpus), target_s=2.0, loadavg_1m=round(os.getloadavg()[0], 2)
    )
    assert checks == 20  # the comparison ran every check (a figure of a run that did nothing is no figure)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--targets", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, cur = _files(Path(tmp), args.queries, args.targets)
        command = [sys.executable, "-m", "bench", "compare", str(base), str(cur)]
        subprocess.run(command, capture_output=True, check=False)  # warms the page cache
        walls, cpus = [], []
        for _ in range(args.repeat):
            start, cpu_before = time.perf_counter(), _children_cpu()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - start)
            cpus.append(_children_cpu() - cpu_before)
        checks = sum(1 for line in done.stdout.splitlines() if line[:4] in ("pass", "FAIL"))
        compare_paths(base, cur, GateConfig())
        start = time.perf_counter()
        compare_paths(base, cur, GateConfig())
        in_process = time.perf_counter() - start
    print(
        f"compare: {args.queries} queries x {args.targets} targets x {len(MEASURES)} measures = {checks} checks "
        f"(exit {done.returncode})"
    )
    print(
        f"  command, fresh process, warm cache: median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f}, {args.repeat} runs)  target <= 2 s"
    )
    print(
        f"  its CPU time (user + sys):          median {statistics.median(cpus):.2f} s "
        f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: wall time grows with it)"
    )
    print(f"  compare_paths in process, warm:      {in_process:.2f} s")


if __name__ == "__main__":
    main()
