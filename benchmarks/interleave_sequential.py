"""`load --interleave --max-time` simulated (issue 45): jobs whose rounds go on until the interval decides or the
budget's rounds are spent, looked at after every round, judged two ways: the anytime-valid sequence the gate uses
(bench/gate/anytime.py) and, to show why it is needed, the fixed-count signed-rank interval looked at as often.

    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --simulate 1000 --sequential 40 \
        [--noise 0.03] [--contamination 0.05] [--limit 0.97] [--slices 2]

The rounds are interleave_power's simulated ones (a machine drifting by 30% over the job and ±20% per round,
shared by both sides; `--noise` the log sd of a round's ratio; `--contamination` the share of slices with a client
stall, texts/s × U(0.3, 0.7)); a job has at most `--sequential` rounds (what the budget holds: a 120 s budget held
~40 rounds of two 1 s windows on this runner, fewer under load). Per kind (A/A, a 10% slower B, a B exactly at the
limit) it prints fail / pass / undecided and the rounds a decision took (median, 90th percentile).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from bench.gate import anytime, paired
from bench.results.schema import InterleavedRound

Rounds = Callable[[np.random.Generator, float, argparse.Namespace], list[InterleavedRound]]
FIRST_LOOK = 3  # the fixed interval is looked at from the 3rd round on (its t interval needs 2)


def log_pairs(r: InterleavedRound) -> list[float]:
    """A round's texts/s slice pairs as log ratios (its windows where it has no slices)."""
    return [math.log(b / a) for a, b in paired.texts_pairs(r) if a and b]


def anytime_decision(job: list[list[float]], limit: float) -> tuple[str, int]:
    """The first round after which the anytime sequence rejects the limit (fail: the centre is below it, pass:
    above), its test at the limit's own log ratio (a centre of its grid); `undecided` with the rounds run when
    neither did."""
    scores = anytime.round_scores(job, np.array([math.log(limit)]))
    crossed = math.log(1 / anytime.ALPHA)
    below, above = anytime.log_wealth(scores, -1.0)[:, 0], anytime.log_wealth(scores, 1.0)[:, 0]
    for n in range(len(job)):
        if below[n] >= crossed:
            return "fail", n + 1
        if above[n] >= crossed:
            return "pass", n + 1
    return "undecided", len(job)


def peeked_decision(job: list[list[float]], limit: float) -> tuple[str, int]:
    """The same looks with the fixed-count signed-rank interval (t below 6 pairs), as if --rounds were re-run
    after each round: its 2.5% holds for one look, not for 40."""
    flat: list[float] = []
    for n, pairs in enumerate(job, 1):
        flat += pairs
        if n < FIRST_LOOK:
            continue
        low, _, high = paired.log_interval(np.array(flat))
        if high < math.log(limit):
            return "fail", n
        if low > math.log(limit):
            return "pass", n
    return "undecided", len(job)


def simulate_sequential(args: argparse.Namespace, simulated_rounds: Rounds) -> None:
    """`--simulate N --sequential MAX`: N jobs of each kind, judged both ways as they go."""
    rng = np.random.default_rng(args.seed)
    budget = argparse.Namespace(**{**vars(args), "rounds": args.sequential})
    for name, ratio in (("A/A", 1.0), (f"{args.step:g}x slower B", 1 / args.step), ("at the limit", args.limit)):
        found: dict[str, list[tuple[str, int]]] = {"anytime (the gate's)": [], "fixed signed-rank, peeked": []}
        for _ in range(args.simulate):
            job = [log_pairs(r) for r in simulated_rounds(rng, ratio, budget)]
            found["anytime (the gate's)"].append(anytime_decision(job, args.limit))
            found["fixed signed-rank, peeked"].append(peeked_decision(job, args.limit))
        print(
            f"simulated {name} (ratio {ratio:.3f}), looked at after every round, at most {args.sequential} rounds "
            f"of {args.slices} slices a side, noise ±{args.noise:.1%}, {args.contamination:.0%} of slices stalled, "
            f"limit {args.limit}:"
        )
        for label, decisions in found.items():
            counts = {v: sum(d == v for d, _ in decisions) for v in ("fail", "pass", "undecided")}
            taken = [n for d, n in decisions if d != "undecided"]
            when = ""
            if taken:
                when = f"; rounds to decide: median {np.median(taken):.0f}, 90% {np.percentile(taken, 90):.0f}"
            print(
                f"  {label}: fail {counts['fail']}, pass {counts['pass']}, undecided {counts['undecided']} of "
                f"{args.simulate}{when}"
            )
