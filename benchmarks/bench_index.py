"""Bounded memory at any corpus size (issue 16 §4): dense and BM25 indexes at 100k / 300k / 1M documents.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_index.py [--sizes 100000,300000,1000000] [--dtype float32] [--served]

Each size and engine runs in a fresh process, so its peak RSS (the child's own `ru_maxrss`) is that run's alone.
Dense: deterministic unit vectors × 384 dimensions written to the on-disk `VectorIndex` in batches of 8,192 (the
vectors are generated in process, not served by an endpoint: the index is measured, not a model or a client),
then 1,000 queries ranked to depth 100. `--served`: the corpus' vectors come through quality's `Encoder` from a
TEI-shaped loopback server of this script's own (its own process, not in the measured RSS) that answers each
text with one of 1,024 precomputed unit vectors, chosen by the text's CRC-32 (deterministic and fast: the client
and the index are measured, not a model); ingest then includes the HTTP client and the JSON decoding.
BM25: the `bm25` engine over synthetic documents of 40 Zipf-distributed words from a 50,000-word vocabulary,
indexed and served from bm25s's memory-mapped index, then 1,000 queries of 3 words. Prints one line per run: wall
and CPU seconds per stage (generating the input is not timed), peak RSS, bytes on disk, and CPU seconds per
million documents (flat across sizes = linear cost), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
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


def run_dense(size: int, dtype: str, url: str | None = None) -> dict[str, float]:
    from bench.targets.vector_index import VectorIndex

    index = VectorIndex(dtype=dtype)
    ingest = Stopwatch()
    encoder = served_encoder(url) if url else None
    for batch, start in enumerate(range(0, size, BATCH)):
        if encoder is None:
            vectors = unit_vectors(batch, min(BATCH, size - start))  # the stand-in for an endpoint: not timed
        else:
            with ingest:
                vectors = encoder.embed([f"document {i}" for i in range(start, min(size, start + BATCH))], "ingest")
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
    from bench.targets.bm25_engine import BM25Engine

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


def served_encoder(url: str):
    from bench.endpoints import open_endpoint, parse_endpoint_spec
    from bench.targets.encoder import Encoder

    return Encoder(
        open_endpoint(parse_endpoint_spec(f"loop=tei@{url}?batch={SERVED_BATCH}&concurrency=4")), cache=False
    )


SERVED_BATCH, TABLE = 256, 1024


def serve(port: int) -> None:
    """The TEI-shaped loopback server: /info, and /embed answering each text with a precomputed vector."""
    import zlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    table = [json.dumps(v.tolist()).encode() for v in unit_vectors(7, TABLE)]
    info = json.dumps({"model_id": "loopback", "model_dtype": "float32", "max_client_batch_size": SERVED_BATCH,
                       "max_input_length": 512, "max_concurrent_requests": 512}).encode()  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._send(info)

        def do_POST(self) -> None:
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["inputs"]
            self._send(b"[" + b",".join(table[zlib.crc32(t.encode()) % TABLE] for t in texts) + b"]")

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


def child(engine: str, size: int, dtype: str, url: str | None) -> None:
    figures = run_dense(size, dtype, url) if engine == "dense" else run_bm25(size, dtype)
    figures["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps(figures))


def measure(engine: str, size: int, dtype: str, url: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-index-") as cache:  # the index files, removed afterwards
        env = {**os.environ, "RAGBENCH_CACHE": cache, "OPENBLAS_NUM_THREADS": "1"}
        args = [sys.executable, __file__, "--child", engine, "--sizes", str(size), "--dtype", dtype]
        args += ["--url", url] if url and engine == "dense" else []
        out = subprocess.run(args, check=True, capture_output=True, text=True, env=env).stdout
    f = json.loads(out.strip().splitlines()[-1])
    per_million = (f["ingest_cpu_s"] + f["search_cpu_s"]) / size * 1e6
    print(
        f"{engine + (' served' if url and engine == 'dense' else ''):12} {dtype if engine == 'dense' else '':7} "
        f"{size:>9,} docs: "
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
    parser.add_argument("--served", action="store_true", help="dense vectors through a TEI-shaped loopback server")
    parser.add_argument("--child", choices=["dense", "bm25"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.serve:
        serve(args.serve)
    elif args.child:
        child(args.child, sizes[0], args.dtype, args.url)
    else:
        run_all(args.engines.split(","), sizes, args.dtype, args.served)


def run_all(engines: list[str], sizes: list[int], dtype: str, served: bool) -> None:
    server, url = None, None
    if served:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)], stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}"
    print(f"{QUERIES:,} queries to depth {DEPTH}; dense {DIM} dimensions; one OpenBLAS thread")
    try:
        for engine in engines:
            for size in sizes:
                measure(engine, size, dtype, url)
    finally:
        if server is not None:
            server.kill()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
