"""Issue 34's extrapolation target, measured on a grown ladder: fitted on the rungs up to a quarter of the largest,
how close is the largest rung's p50 predicted — by the chosen law, and within the range of the credible laws?

    PYTHONPATH=. .venv/bin/python benchmarks/grow_extrapolate.py reports/grow/results.jsonl [--quantity p50]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.grow.laws import choose_law
from bench.results.schema import GrowRungRecord
from bench.results.store import read_results


def extrapolate(target: str, rungs: list[GrowRungRecord], quantity: str) -> str:
    points = sorted((r.size, r.latency_ms[quantity]) for r in rungs if quantity in r.latency_ms)
    if not points:
        return f"{target}: no {quantity} measured"
    largest, measured = points[-1]
    seen = [(n, v) for n, v in points if n <= largest / 4]
    fit = choose_law(np.asarray([n for n, _ in seen], dtype=float), np.asarray([v for _, v in seen]))
    if fit is None:
        return f"{target}: {len(seen)} rung(s) up to a quarter of {largest:,}: too few for a law"
    predicted = fit.predict(largest).item()
    low, high = fit.spread(largest)
    inside = "inside" if low <= measured <= high else "outside"
    return (
        f"{target}: fitted on {len(seen)} rungs to {seen[-1][0]:,}: {fit.law} predicts {quantity} {predicted:.3g} ms "
        f"at {largest:,} against {measured:.3g} measured ({(predicted - measured) / measured:+.0%}); the credible "
        f"laws ({', '.join(law for law, _, _ in fit.credible)}) give {low:.3g} to {high:.3g} ms: measured {inside}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path)
    parser.add_argument("--quantity", default="p50")
    args = parser.parse_args()
    results = read_results(args.results)
    for target in dict.fromkeys(r.target for r in results.grow_rungs):
        rungs = [r for r in results.grow_rungs if r.target == target]
        print(extrapolate(target, rungs, args.quantity))


if __name__ == "__main__":
    main()
