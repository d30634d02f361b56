"""Issue 17's quality-under-load target, measured: the truncating TEI-shaped fixture (inputs cut to 64 words when
more than 3 requests are in flight) behind `quality --background`; prints the figures docs/benchmarks.md quotes.

    PYTHONPATH=. .venv/bin/python benchmarks/quality_under_load.py [--rates 10,250] [--queries 40]

Each rate's nDCG@10 and Holm p against the idle run (rate 0), the idle run against a plain `quality` run
(per-query equality and its own paired p), and how many requests the fixture truncated.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.quality.significance import compare_pairs
from tests.quality.underload_fixture import UnderloadServer, ndcg_at_10, write_long_queries

MEASURE = "ndcg_cut_10"
TARGET = "dense?embedder=emb"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", default="10,250")
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["RAGBENCH_CACHE"] = str(root / "cache")  # a cold cache: nothing from an earlier run
        (root / "data").mkdir()
        dataset = write_long_queries(root / "data", args.queries)
        server = UnderloadServer(max_inflight=3, service_ms=40).start()
        try:
            plain = _run(dataset, root / "plain", server.url, None)
            truncated_plain = server.truncated
            started = time.perf_counter()
            loaded = _run(dataset, root / "bg", server.url, f"emb@rate={args.rates}&duration=5s&warmup=1s")
            loaded_s = time.perf_counter() - started
        finally:
            server.shutdown()
    idle = loaded.metric(f"{TARGET}@bg0", MEASURE)
    base = plain.metric(TARGET, MEASURE)
    (same,) = compare_pairs({"plain": base.per_query, "idle": idle.per_query}, MEASURE)
    print(f"plain run: nDCG@10 {base.mean:.4f}; requests truncated {truncated_plain}")
    print(f"rate 0 vs plain: per-query identical {idle.per_query == base.per_query}, p {same.p_randomization:.4f}")
    for target in loaded.targets:
        metric = loaded.metric(target.name, MEASURE)
        pair = {f"{TARGET}@bg0", target.name}
        c = next((c for c in loaded.comparisons if c.measure == MEASURE and {c.a, c.b} == pair), None)
        p = "-" if target.name.endswith("@bg0") or c is None else f"{c.p_randomization_holm:.1e}"
        print(
            f"{target.name}: nDCG@10 {metric.mean:.4f} [{metric.ci_low:.4f}, {metric.ci_high:.4f}], "
            f"Holm p vs idle {p}, query p99 {target.latency_ms.get('p99', 0):.1f} ms"
        )
    for point in loaded.load_points:
        searched = sum(t.search_seconds for t in loaded.targets if t.name.endswith(f"@bg{point.rate:g}"))
        print(
            f"stream {point.rate:g}/s: {point.requests.ok} ok, {sum(point.requests.errors.values())} errors, "
            f"{point.requests.unsent} unsent over {point.duration_s:.2f} s (its searches: {searched:.2f} s)"
        )
    print(f"--background run: {loaded_s:.1f} s")
    print(f"requests truncated by the fixture: {server.truncated}")


def _run(dataset: Path, out: Path, url: str, background: str | None):
    return ndcg_at_10(dataset, out, [TARGET], f"emb=tei@{url}", background)


if __name__ == "__main__":
    main()
