"""The history's change-point detector, measured (issue 27 §4): false alarms, power, a quality drop, and time.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_history.py [--series 1000] [--runs 100] [--timing-runs 200]

Runner noise like this machine's (±21-26% between runs of one load sweep, docs/ci.md): throughput is
1000 x (1 + s x T3), T3 a Student t with 3 degrees of freedom (heavy tails: one run in a hundred is off by
more than ±45%), s = 0.25 / t3(0.975) = 0.0786 so that the central 95% of runs lie within ±25%; a run's figure
is floored at 1% of the level.
- false alarms: --series series of --runs runs without a change: change points per 100 runs;
- power: a 10% throughput step at the middle run, offline (the whole series; found when a change point lies at
  the step or up to 3 runs after it) and online (the history re-read after each run, as CI does: the runs after
  the step until the newest run starts a change point within 3 runs of it), at ±25% and quieter noise;
- quality: 300 queries, nDCG@10 dropped 0.02 at a known run (a fifth of the queries lose 0.1), scores the same
  in every run (a deterministic index) or moved ±0.05 per query per run (sd 0.025: a nondeterministic one);
  found when a change point lies at the run of the drop, the history ending at that run (the newest run);
- time: `ragbench history` (read, analyse, markdown, JSON and PNG pages) over --timing-runs runs of a 12-point
  load sweep and a 300-query quality job, written with the project's own writer.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.commands.history import HistoryRequest, history_report  # noqa: E402
from bench.history.changepoints import DetectorSettings, change_positions  # noqa: E402
from bench.history.series import Gate, Observation, Scale, Series  # noqa: E402
from bench.report.history import write_outputs  # noqa: E402
from tests.history.helpers import as_scores, base_scores, write_load_run, write_quality_run  # noqa: E402

T_DF = 3
NEAR = 3  # runs after the step within which it counts as found
SWEEP = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # the timed load sweep's 12 points (batch sizes)


def noise_scale(half_width: float) -> float:
    """The t3 scale whose central 95% is ±half_width."""
    return half_width / float(stats.t.ppf(0.975, T_DF))


def throughput(rng: np.random.Generator, runs: int, half_width: float, step_at: int | None, step: float) -> np.ndarray:
    values = 1000 * np.maximum(1 + noise_scale(half_width) * rng.standard_t(T_DF, size=runs), 0.01)
    if step_at is not None:
        values[step_at:] *= step
    return values


def load_series(values: np.ndarray) -> Series:
    observations = [Observation(i, float(v)) for i, v in enumerate(values)]
    return Series("load", "sim", "texts/s", Gate.THROUGHPUT, Scale.RATIO, True, observations=observations)


def false_alarms(series: int, runs: int, settings: DetectorSettings) -> None:
    rng = np.random.default_rng(27)
    found = [
        len(change_positions(load_series(throughput(rng, runs, 0.25, None, 1.0)), settings)) for _ in range(series)
    ]
    per_100 = 100 * sum(found) / (series * runs)
    print(
        f"false alarms: {sum(found)} change points in {series} series of {runs} runs without a change at ±25% "
        f"t3 noise: {per_100:.3f} per 100 runs (target ≤ 1); series with any: {sum(1 for f in found if f) / series:.1%}"
    )


def online_delay(values: np.ndarray, step_at: int, settings: DetectorSettings, limit: int = 25) -> int | None:
    """Runs after the step until the newest run's segment starts within NEAR runs of it (None: not within limit)."""
    for end in range(step_at + 1, min(len(values), step_at + limit) + 1):
        positions = change_positions(load_series(values[:end]), settings)
        if positions and abs(positions[-1][0] - step_at) <= NEAR:
            return end - step_at
    return None


def power(series: int, runs: int, settings: DetectorSettings, online: int) -> None:
    step_at = runs // 2
    for half_width in (0.25, 0.15, 0.10, 0.05):
        rng = np.random.default_rng(10)
        hits = anywhere = 0
        delays: list[int | None] = []
        for i in range(series):
            values = throughput(rng, runs, half_width, step_at, 0.9)
            positions = [p for p, _, _ in change_positions(load_series(values), settings)]
            hits += any(step_at <= p <= step_at + NEAR for p in positions)
            anywhere += bool(positions)
            if i < online:
                delays.append(online_delay(values, step_at, settings))
        found = sorted(d for d in delays if d is not None)
        median = f"{found[len(found) // 2]}" if found else "–"
        within3 = sum(1 for d in found if d <= NEAR) / max(len(delays), 1)
        print(
            f"power ±{half_width:.0%}: 10% step at run {step_at} of {runs}: found at it or ≤3 runs after "
            f"{hits / series:.1%}, a change point anywhere {anywhere / series:.1%}; online ({len(delays)} series): "
            f"starts within 3 runs of it after {median} runs (median), by 3 runs after {within3:.1%}, by 25 runs "
            f"{len(found) / max(len(delays), 1):.1%}"
        )


def quality_history(rng: np.random.Generator, queries: int, runs: int, drop_at: int | None, noise: float) -> Series:
    base = rng.beta(2, 2, size=queries)
    hurt = np.isin(np.arange(queries), rng.choice(queries, size=queries // 5, replace=False))
    qids = tuple(f"q{i}" for i in range(queries))
    observations = []
    for run in range(runs):
        dropped = drop_at is not None and run >= drop_at
        scores = np.clip(base - 0.1 * hurt * dropped + noise * rng.standard_normal(queries), 0, 1)
        observations.append(Observation(run, float(scores.mean()), tuple(scores), qids=qids))
    return Series("quality", "sim", "nDCG@10", Gate.QUALITY, Scale.DIFFERENCE, True, "ndcg_cut_10", qids, observations)


def quality_drop(series: int, settings: DetectorSettings) -> None:
    queries, drop_at = 300, 20
    for label, noise in (("deterministic", 0.0), ("±0.05 per query per run", 0.025)):
        rng = np.random.default_rng(3)
        at_run = anywhere = false = 0
        for _ in range(series):
            # the history ends at the run of the drop: the newest run
            positions = [
                p for p, _, _ in change_positions(quality_history(rng, queries, drop_at + 1, drop_at, noise), settings)
            ]
            at_run += drop_at in positions
            anywhere += bool(positions)
            false += len(change_positions(quality_history(rng, queries, 100, None, noise), settings))
        print(
            f"quality, {label}: 0.02 nDCG@10 drop on {queries} queries at run {drop_at} (the newest): found at its run "
            f"in {at_run / series:.1%} of {series} histories, a change point anywhere {anywhere / series:.1%}; "
            f"without a drop: {false} change points in {series} series of 100 runs"
        )


def timing(runs: int) -> None:
    rng = np.random.default_rng(5)
    base = base_scores(300)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        for run in range(runs):
            slower = 0.8 if run >= runs * 3 // 4 else 1.0
            points = {b: 100.0 * b * slower * (1 + 0.08 * rng.standard_t(T_DF)) for b in SWEEP}
            write_load_run(folder / f"run{run:03d}" / "load", run, points)
            scores = np.clip(base + 0.01 * rng.standard_normal(300), 0, 1)
            write_quality_run(folder / f"run{run:03d}" / "quality", run, as_scores(scores))
        written = time.perf_counter() - start
        start = time.perf_counter()
        report = history_report(HistoryRequest(runs=[str(folder)], min_throughput_ratio="0.95"))
        analysed = time.perf_counter() - start
        write_outputs(report, folder / "out", [])
        total = time.perf_counter() - start
    changes = sum(len(s.changes) for s in report.series)
    print(
        f"time: {runs} runs of a 12-point load sweep + a 300-query quality job ({len(report.series)} series, "
        f"{changes} change points): read + analysed {analysed:.1f} s, with markdown, JSON and PNG pages "
        f"{total:.1f} s (target ≤ 30 s); writing the files took {written:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--online", type=int, default=100, help="series of the online power, per noise level")
    parser.add_argument("--quality-series", type=int, default=200)
    parser.add_argument("--timing-runs", type=int, default=200)
    args = parser.parse_args()
    settings = DetectorSettings()
    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    print(f"detector: α={settings.alpha} per split, up to {settings.permutations} shuffles, seed {settings.seed}")
    for name, run in (
        ("false alarms", lambda: false_alarms(args.series, args.runs, settings)),
        ("power", lambda: power(args.series, args.runs, settings, args.online)),
        ("quality", lambda: quality_drop(args.quality_series, settings)),
        ("time", lambda: timing(args.timing_runs)),
    ):
        start = time.perf_counter()
        run()
        print(f"  ({name}: {time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
