"""`history` gating the newest run (issue 32 §3), measured on simulated series: false alarms per run and the power
to flag a step within 1, 2 and 3 runs, the gate as CI runs it (the history re-read after each run).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_history_newest.py [--series 200] [--flat-runs 100] [--before 20]

Noise between runs as in benchmarks/bench_history.py: throughput = 1000 x (1 + s x T3), T3 a Student t with 3
degrees of freedom, s chosen so the central 95% of runs lie within ±NOISE (±25% measured here between runs of one
load sweep); a run's figure floored at 1% of the level. The gate is `history --min-throughput-ratio 0.95` at
--alpha 0.01: a run fails when it starts a change point past the limit or lies out of line past it.
- the first check: 12 flat runs (±2%, normal) then one 30% slower: the exit code at that run;
- false alarms: --series series of --flat-runs runs without a change, the gate after each run from the 2nd on:
  failed runs per 100 runs (at ±25% t3, and at ±5% normal noise, where the t3 bound is conservative);
- power: --before runs, then a step down of 10/20/30/50%: the share of series flagged by the 1st, 2nd and 3rd run
  after the step (a run flagged when the gate fails it), at ±1, ±5, ±10 and ±25% t3 noise.

Issue 45 (the bound from the runs' own spread, normal noise):

    PYTHONPATH=. .venv/bin/python benchmarks/bench_history_newest.py --issue45 [--series 300] [--flat-runs 100] \
        [--alpha A]

- false alarms per 100 runs at ±6% normal noise (the issue's runs: 8 at 322-365 texts/s), --series series of
  --flat-runs runs, and at ±25% t3 noise (heavier tails than the bound is drawn for);
- the issue's case: 8 runs at ±6% normal, then one 12.7% lower (x0.873 of the level, noise on it too; and x0.873
  of the 8 runs' own median exactly): the share of 10 x --series histories whose 9th run fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.history.analysis import Limits, analyse  # noqa: E402
from bench.history.changepoints import DetectorSettings  # noqa: E402
from bench.history.runs import HistoryRun  # noqa: E402
from bench.history.series import Gate, History, Observation, Scale, Series  # noqa: E402

T_DF = 3
LIMITS = Limits(min_throughput_ratio=0.95)
SETTINGS = [DetectorSettings()]  # --alpha replaces it: the gate's level, as `history --alpha`
STEPS = (0.9, 0.8, 0.7, 0.5)
NOISES = (0.01, 0.05, 0.10, 0.25)
AFTER = 3  # runs after the step


def noisy(rng: np.random.Generator, runs: int, half_width: float, normal: bool = False) -> np.ndarray:
    if normal:
        draws = rng.standard_normal(runs) * half_width / float(stats.norm.ppf(0.975))
    else:
        draws = rng.standard_t(T_DF, size=runs) * half_width / float(stats.t.ppf(0.975, T_DF))
    return 1000 * np.maximum(1 + draws, 0.01)


def failed(values: np.ndarray) -> bool:
    """Whether `history --min-throughput-ratio 0.95` fails the last of these runs."""
    observations = [Observation(i, float(v)) for i, v in enumerate(values)]
    series = Series("load", "sim", "texts/s", Gate.THROUGHPUT, Scale.RATIO, True, observations=observations)
    runs = [HistoryRun(i, Path(f"r{i}"), "load", str(i), {}, str(i)) for i in range(len(values))]
    return bool(analyse(History(runs, [series]), LIMITS, SETTINGS[0]).failed)


def first_check() -> str:
    values = noisy(np.random.default_rng(0), 13, 0.02, normal=True)
    values[12] *= 0.7
    return f"12 flat runs (±2%) + 1 run 30% slower: exit {1 if failed(values) else 0} at that run"


def false_alarms(series: int, runs: int, half_width: float, normal: bool) -> str:
    rng = np.random.default_rng(1)
    alarms = gated = 0
    for _ in range(series):
        values = noisy(rng, runs, half_width, normal)
        for end in range(2, runs + 1):
            alarms += failed(values[:end])
            gated += 1
    kind = "normal" if normal else "t3"
    return f"false alarms, ±{half_width:.0%} {kind}: {alarms} in {gated} runs = {100 * alarms / gated:.2f} per 100 runs"


def power(series: int, before: int, half_width: float, step: float) -> list[float]:
    """The share of series flagged by the 1st, 2nd, ... run after the step."""
    rng = np.random.default_rng(2)
    flagged_by = np.zeros(AFTER)
    for _ in range(series):
        values = noisy(rng, before + AFTER, half_width)
        values[before:] *= step
        first = next((k for k in range(AFTER) if failed(values[: before + k + 1])), None)
        if first is not None:
            flagged_by[first:] += 1
    return list(flagged_by / series)


def issue_case(series: int, of_median: bool) -> str:
    """8 runs at ±6% normal, then one 12.7% lower: the share of histories whose 9th run fails."""
    rng = np.random.default_rng(4)
    flagged = 0
    for _ in range(series):
        values = noisy(rng, 9, 0.06, normal=True)
        values[8] = 0.873 * (float(np.median(values[:8])) if of_median else values[8])
        flagged += failed(values)
    where = "of the 8 runs' median" if of_median else "of the level (noise on it too)"
    return f"8 runs ±6% normal, then x0.873 {where}: {flagged} of {series} flagged = {flagged / series:.1%}"


def issue45(series: int, runs: int) -> None:
    print(false_alarms(series, runs, 0.06, normal=True))
    print(false_alarms(series, runs, 0.25, normal=False))
    print(issue_case(10 * series, of_median=False))
    print(issue_case(10 * series, of_median=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=200)
    parser.add_argument("--flat-runs", type=int, default=100)
    parser.add_argument("--before", type=int, default=20)
    parser.add_argument("--issue45", action="store_true", help="the bound from the runs' spread: see the docstring")
    parser.add_argument("--alpha", type=float, default=DetectorSettings().alpha, help="history --alpha")
    args = parser.parse_args()
    SETTINGS[0] = DetectorSettings(alpha=args.alpha)
    if args.issue45:
        issue45(args.series, args.flat_runs)
        return
    print(first_check())
    print(false_alarms(args.series, args.flat_runs, 0.25, normal=False))
    print(false_alarms(args.series, args.flat_runs, 0.05, normal=True))
    print(
        f"\npower after {args.before} flat runs, {args.series} series per cell: flagged by run 1 / 2 / 3 after the step"
    )
    print("| noise (t3) | " + " | ".join(f"{1 - s:.0%} step" for s in STEPS) + " |")
    print("|---|" + "---|" * len(STEPS))
    for half_width in NOISES:
        cells = [" / ".join(f"{share:.0%}" for share in power(args.series, args.before, half_width, s)) for s in STEPS]
        print(f"| ±{half_width:.0%} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
