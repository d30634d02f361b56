"""interleave_power's two modes that run no server (issue 36): simulated jobs and recorded jobs judged again,
each judged three ways (JUDGES) at the same limit.

Imported by benchmarks/interleave_power.py (`--simulate`, `--rejudge`) and benchmarks/interleave_sequential.py.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench.core.resample import CONFIDENCE, Interval
from bench.gate import paired
from bench.gate.noise import Verdict, judge
from bench.load.interleave_slices import slice_order
from bench.results.schema import InterleavedRound
from bench.results.store import read_results


def t_interval(a: list[float], b: list[float]) -> Interval:
    """The statistics before 2026-12-06, kept here to compare: the geometric mean of the ratios and the 95%
    Student t interval on their logs."""
    logs = np.log(b) - np.log(a)
    n = len(logs)
    half = paired._t(0.5 + CONFIDENCE / 2, n - 1) * float(logs.std(ddof=1)) / math.sqrt(n)
    mean = float(logs.mean())
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half))


JUDGES = ("t interval, rounds (before 2026-12-06)", "signed-rank, rounds", "signed-rank, slice pairs (now)")


def judged(rounds: list[InterleavedRound], limit: float) -> list[Verdict]:
    """A job's texts/s judged three ways at `limit`, one verdict per JUDGES: the Student t interval on the rounds'
    windows, the signed-rank interval on them, and the signed-rank interval on the slice pairs (what the gate
    does now; the same as by rounds for a record without slices). A window with no answer is left out."""
    kept = [r for r in rounds if r.baseline_texts_per_s and r.current_texts_per_s]
    a, b = [r.baseline_texts_per_s for r in kept], [r.current_texts_per_s for r in kept]
    whole = [replace(r, baseline_slices_texts_per_s=None, current_slices_texts_per_s=None) for r in kept]
    limits: dict[str, float | None] = {"texts_per_s": limit}
    return [
        judge(t_interval(a, b), limit, True),
        paired.judged_figures(whole, limits)[1] or Verdict.INCONCLUSIVE,
        paired.judged_figures(kept, limits)[1] or Verdict.INCONCLUSIVE,
    ]


def simulated_rounds(rng: np.random.Generator, step: float, args: argparse.Namespace) -> list[InterleavedRound]:
    """One simulated job: per round the machine's level (±20%, drifting by 30% over the job, shared), each side's
    `--slices` slices in load --slice's order (X Y Y X), each slice adding its share of `--noise` (a window of S
    slices has the noise of one slice over sqrt(S)), a client stall in a `--contamination` share of the slices
    (that slice's texts/s x U(0.3, 0.7)); a side's window is its slices' mean."""
    slices = args.slices
    drift = np.linspace(1, 0.7, args.rounds)
    rounds = []
    for i in range(args.rounds):
        machine = math.exp(rng.normal(0, 0.2)) * drift[i]
        first = int(rng.integers(2))
        sides: list[list[float]] = [[], []]
        for side in slice_order(first, slices):
            value = (
                100
                * machine
                * (step if side == 1 else 1.0)
                * math.exp(rng.normal(0, args.noise * math.sqrt(slices / 2)))
            )
            if rng.random() < args.contamination:
                value *= rng.uniform(0.3, 0.7)
            sides[side].append(value)
        a, b = sides
        wa, wb = float(np.mean(a)), float(np.mean(b))
        rounds.append(InterleavedRound(i + 1, "ab"[first], wa, wb, None, None, None, None, wb / wa, None, None, a, b))
    return rounds


def simulate(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    for name, step in (("A/A", 1.0), ("A/B", 1 / args.step), ("at the limit", args.limit)):
        verdicts: list[list[Verdict]] = [[] for _ in JUDGES]
        for _ in range(args.simulate):
            for found, v in zip(verdicts, judged(simulated_rounds(rng, step, args), args.limit), strict=True):
                found.append(v)
        print(
            f"simulated {name} (ratio {step:.3f}), {args.rounds} rounds of {args.slices} slices a side, paired "
            f"noise ±{args.noise:.1%} per round, 30% drift, {args.contamination:.0%} of slices stalled, "
            f"limit {args.limit}:"
        )
        for label, found in zip(JUDGES, verdicts, strict=True):
            print(
                f"  {label}: fail {found.count(Verdict.FAIL)}, inconclusive {found.count(Verdict.INCONCLUSIVE)}, "
                f"pass {found.count(Verdict.PASS)} of {args.simulate}"
            )


def rejudge(folders: list[str], limit: float) -> None:
    """Recorded jobs (each `step-*` and `twins-*` folder's interleaved record) judged again from their texts/s by
    each of JUDGES at `limit`: A/B flagged, A/A failed, each way (slice pairs: records written since slices were
    kept; older ones are judged by round)."""
    for folder in folders:
        if not any(Path(folder).glob("*-*/results.jsonl")):
            print(f"interleave_power: error: {folder}: no step-*/ or twins-*/results.jsonl in it", file=sys.stderr)
            sys.exit(2)
    for folder in folders:
        for kind in ("step", "twins"):
            counts = {label: [0, 0] for label in JUDGES}  # [fail, inconclusive]
            jobs = 0
            for results in sorted(Path(folder).glob(f"{kind}-*/results.jsonl")):
                for record in read_results(results).interleaved:
                    jobs += 1
                    for tally, v in zip(counts.values(), judged(record.rounds, limit), strict=True):
                        tally[0] += v == Verdict.FAIL
                        tally[1] += v == Verdict.INCONCLUSIVE
            said = "; ".join(f"{label}: fail {f}, inconclusive {i}" for label, (f, i) in counts.items())
            print(f"{folder} {'A/B' if kind == 'step' else 'A/A'} ({jobs} jobs, limit {limit:g}): {said}")
