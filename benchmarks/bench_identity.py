"""Identity's own cost: time on top of the endpoints, and peak memory, measured and printed.

Targets (issue 4): 10,000 texts across 3 endpoints add <= 1 s on top of the endpoints' time;
100,000 texts of dimension 1,024 stay under 1 GiB. The endpoints here are synthetic and in-process
(vectors computed from each text's id, identical alone or in a batch), so their time is small and
measured separately: what is left is ragbench's own work (tokenizing, streaming comparison,
neighbours, batch invariance bookkeeping, report).

    python benchmarks/bench_identity.py            # both targets, each size in a fresh process
    python benchmarks/bench_identity.py --texts 10000 --dim 384
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.endpoints.base import CallTiming, Embeddings
from bench.identity.inputs import from_texts
from bench.identity.run import IdentityRequest, compare_endpoints

WORDS = "protein cell gene study patients risk effect model data cancer immune expression clinical trial".split()


class SyntheticEmbedder:
    """Vectors from the id at the start of each text: deterministic, batch-invariant, cheap."""

    kind = "synthetic"

    def __init__(self, name: str, dim: int, noise: float):
        self.name = name
        self.dim = dim
        self.noise = noise  # a relative wobble per endpoint, far below fp32 thresholds
        self.frequencies = np.linspace(0.01, 3.0, dim, dtype=np.float32)

    def embed(self, texts: list[str]) -> Embeddings:
        ids = np.asarray([int(t.split(" ", 1)[0]) for t in texts], dtype=np.float32)
        vectors = np.sin(np.outer(ids + 1.0, self.frequencies) + ids[:, None] % 7)
        vectors *= 1.0 + self.noise * np.cos(ids)[:, None]
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return Embeddings(vectors.astype(np.float32), [CallTiming(len(texts), 0.0)])

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "dim": self.dim}

    def dtype(self) -> str | None:
        return "float32"

    def close(self) -> None:
        pass


def write_texts(path: Path, n: int) -> None:
    rng = np.random.default_rng(0)
    with path.open("w") as handle:
        for i in range(n):
            words = rng.choice(WORDS, size=int(rng.integers(5, 60)))
            handle.write(f"{i} {' '.join(words)}\n")


def measure(n: int, dim: int, tokenizer: Path | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        texts = Path(folder) / "texts.txt"
        write_texts(texts, n)
        inputs = from_texts(texts)
    endpoints = {name: SyntheticEmbedder(name, dim, noise) for name, noise in (("a", 0.0), ("b", 1e-7), ("c", 2e-7))}
    started = time.perf_counter()
    report = compare_endpoints(endpoints, IdentityRequest([], inputs, tokenizer=tokenizer))
    wall = time.perf_counter() - started
    assert report.passed, [p.failures for p in report.embed_pairs]
    return {"texts": n, "dim": dim, "endpoints": 3, "wall_s": wall, "endpoint_s": sum(report.timings["endpoint_s"].values()),
            "suite_s": report.timings["suite_s"], "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, help="measure one size in this process")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--tokenizer", type=Path, help="model folder with tokenizer.json (default: the bundled MiniLM)")
    args = parser.parse_args()
    tokenizer = args.tokenizer
    if tokenizer is None:
        from bench.endpoints.reference import default_embedding_model

        tokenizer = default_embedding_model()
    if args.texts:
        print(json.dumps(measure(args.texts, args.dim, tokenizer)))
        return
    # Each size in a fresh process, so peak RSS belongs to that size alone.
    for n, dim, target in ((10_000, 384, "suite_s <= 1.0"), (10_000, 1024, "suite_s <= 1.0"), (100_000, 1024, "peak_rss_mib < 1024")):
        out = subprocess.run([sys.executable, __file__, "--texts", str(n), "--dim", str(dim), "--tokenizer", str(tokenizer)],
                             check=True, capture_output=True, text=True).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        print(f"{n:>7} texts x {dim:>4} dims x 3 endpoints: wall {figures['wall_s']:.2f} s, endpoints {figures['endpoint_s']:.2f} s, "
              f"ragbench's own {figures['suite_s']:.2f} s, peak RSS {figures['peak_rss_mib']:.0f} MiB   (target: {target})")


if __name__ == "__main__":
    main()
