"""CLI start-up figures (issue 37): `ragbench --help`, `ragbench evaluate` on 300 queries x 100 documents, and
pytrec_eval alone on the same files (the floor: its import, parsing and scoring), each the median wall time of
several runs in a fresh process. Run: `python benchmarks/startup.py [--runs 7]` (PYTHONPATH picks the tree)."""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES, DOCUMENTS = 300, 100

# pytrec_eval alone: read both files, score the evaluate command's default measures
_FLOOR = """
import sys, pytrec_eval
qrels, run = {}, {}
for line in open(sys.argv[1]):
    q, _, d, r = line.split()
    qrels.setdefault(q, {})[d] = int(r)
for line in open(sys.argv[2]):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "map"}).evaluate(run)
"""


def write_files(folder: Path) -> tuple[Path, Path]:
    """A qrels (5 judged documents a query) and a run (100 ranked documents a query), seeded."""
    rng = random.Random(37)
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    with qrels.open("w") as q, run.open("w") as r:
        for query in range(QUERIES):
            for doc in rng.sample(range(1000), 5):
                q.write(f"q{query} 0 d{doc} {rng.randint(1, 2)}\n")
            for rank, doc in enumerate(rng.sample(range(1000), DOCUMENTS), start=1):
                r.write(f"q{query} Q0 d{doc} {rank} {DOCUMENTS - rank + 0.5} startup\n")
    return qrels, run


def median_seconds(argv: list[str], runs: int) -> float:
    """The median wall time of `runs` fresh processes running `argv` (each must exit 0)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        qrels, run = write_files(Path(folder))
        cli = [sys.executable, "-m", "bench"]
        figures = {
            "ragbench --help": median_seconds([*cli, "--help"], runs),
            f"ragbench evaluate {QUERIES}x{DOCUMENTS}": median_seconds([*cli, "evaluate", str(qrels), str(run)], runs),
            "pytrec_eval alone": median_seconds([sys.executable, "-c", _FLOOR, str(qrels), str(run)], runs),
        }
    for name, seconds in figures.items():
        print(f"{name:32} {seconds:6.2f} s  (median of {runs})")


if __name__ == "__main__":
    main()
