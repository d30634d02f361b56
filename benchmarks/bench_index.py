"""Bounded memory at any corpus size (issue 16 §4): dense and BM25 indexes at 100k / 300k / 1M documents.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_index.py [--sizes 100000,300000,1000000] [--dtype float32]

Each size and engine runs in a fresh process, so its peak RSS (the child's own `ru_maxrss`) is that run's alone.
Dense: deterministic unit vectors × 384 dimensions written to the on-disk `VectorIndex` in batches of 8,192 (the
vectors are generated in process, not served by an endpoint: the index is measured, not a model or a client),
then 1,000 queries ranked to depth 100. BM25: the `bm25` engine over synthetic documents of 40 Zipf-distributed
words from a 50,000-word vocabulary, indexed and served from bm25s's memory-mapped index, then 1,000 queries of
3 words. Prints one line per run: wall and CPU seconds per stage (generating the input is not timed), peak
RSS, bytes on disk, and CPU seconds per million documents (flat across sizes = linear cost), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM, QUERIES, DEPTH, BATCH = 384, 1000, 100, 8192
VOCABULARY, DOC_WORDS, QUERY_WORDS = 50_000, 40, 3


def unit_vectors(seed: int, rows: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def run_dense(size: int, dtype: str) -> dict[str, float]:
    from bench.targets.vector_index import VectorIndex

    index = VectorIndex(dtype=dtype)
    ingest = Stopwatch()
    for batch, start in enumerate(range(0, size, BATCH)):
        vectors = unit_vectors(batch, min(BATCH, size - start))  # the stand-in for an endpoint: not timed
        with ingest:
            index.append(vectors)
    queries = unit_vectors(1 << 31, QUERIES)
    with Stopwatch() as search:
        top = index.search(queries, DEPTH)
    assert top.positions.shape == (QUERIES, DEPTH)
    return {**ingest.figures("ingest"), **search.figures("search"), "disk_bytes": size * DIM * np.dtype(dtype).itemsize}


class Stopwatch:
    """Wall and CPU seconds summed over the blocks it times (CPU seconds barely move with other jobs' load)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Stopwatch:
        self._started = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._started[0]
        self.cpu += time.process_time() - self._started[1]

    def figures(self, stage: str) -> dict[str, float]:
        return {f"{stage}_s": self.wall, f"{stage}_cpu_s": self.cpu}


def synthetic_words(rng: np.random.Generator, count: int) -> np.ndarray:
    """Word numbers with Zipf's law over the vocabulary (rank 1 most frequent), as in natural text."""
    ranks = rng.zipf(1.1, size=count)
    return np.where(ranks <= VOCABULARY, ranks, rng.integers(1, VOCABULARY + 1, size=count))


def run_bm25(size: int, dtype: str) -> dict[str, float]:
    from bench.datasets.model import Dataset, Document
    from bench.targets.base import no_progress
    from bench.targets.local import BM25Engine

    rng = np.random.default_rng(0)
    words = [f"w{i}x" for i in range(VOCABULARY + 1)]
    corpus = {}
    for start in range(0, size, BATCH):
        rows = synthetic_words(rng, min(BATCH, size - start) * DOC_WORDS).reshape(-1, DOC_WORDS)
        for i, row in enumerate(rows, start=start):
            corpus[f"d{i}"] = Document(f"d{i}", "", " ".join(words[w] for w in row))
    queries = {f"q{i}": " ".join(words[w] for w in rng.integers(1, 2000, QUERY_WORDS)) for i in range(QUERIES)}
    dataset = Dataset("synthetic", corpus, queries, {}, source="memory", format="jsonl")
    engine = BM25Engine()
    with Stopwatch() as ingest:
        engine.prepare(dataset, no_progress)
    with Stopwatch() as search:
        engine.search(queries, DEPTH, no_progress)
    scores = engine._retriever.scores
    disk = sum(scores[name].nbytes for name in ("data", "indices", "indptr"))
    return {**ingest.figures("ingest"), **search.figures("search"), "disk_bytes": disk}


def child(engine: str, size: int, dtype: str) -> None:
    figures = (run_dense if engine == "dense" else run_bm25)(size, dtype)
    figures["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps(figures))


def measure(engine: str, size: int, dtype: str) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-index-") as cache:  # the index files, removed afterwards
        env = {**os.environ, "RAGBENCH_CACHE": cache, "OPENBLAS_NUM_THREADS": "1"}
        args = [sys.executable, __file__, "--child", engine, "--sizes", str(size), "--dtype", dtype]
        out = subprocess.run(args, check=True, capture_output=True, text=True, env=env).stdout
    f = json.loads(out.strip().splitlines()[-1])
    per_million = (f["ingest_cpu_s"] + f["search_cpu_s"]) / size * 1e6
    print(
        f"{engine:5} {dtype if engine == 'dense' else '':7} {size:>9,} docs: "
        f"ingest {f['ingest_s']:6.1f} s (CPU {f['ingest_cpu_s']:6.1f}), "
        f"{QUERIES:,} queries {f['search_s']:6.1f} s (CPU {f['search_cpu_s']:6.1f}), "
        f"peak RSS {f['peak_rss_bytes'] / 2**30:5.2f} GiB, on disk {f['disk_bytes'] / 2**30:5.2f} GiB, "
        f"CPU {per_million:6.1f} s per million docs (load average {os.getloadavg()[0]:.1f})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    parser.add_argument("--engines", default="dense,bm25")
    parser.add_argument("--child", choices=["dense", "bm25"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        child(args.child, sizes[0], args.dtype)
        return
    print(f"{QUERIES:,} queries to depth {DEPTH}; dense {DIM} dimensions; one OpenBLAS thread")
    for engine in args.engines.split(","):
        for size in sizes:
            measure(engine, size, args.dtype)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
