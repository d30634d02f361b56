"""Change points of a series: a deterministic split-and-test detector (E-divisive style) with a stated false-alarm rate.

Binary segmentation: a segment of runs is tested for a change (below), and when the test says it changed at
level `alpha` the split that best separates the runs before it from those after it is a change point; then
each side is searched the same way. Each test is at level `alpha`, so a series with no change gets a false
change point with probability `alpha` (0.01: one series in a hundred; docs/ci.md measures it).

- Speed, latency and identity figures: the test works on the ranks of the runs' figures (a heavy-tailed runner,
  one wild run, moves ranks by one place, not the mean by its size): its statistic is the largest l2 cost a
  split saves on the ranks, k(m-k)/m x (mean rank before - mean rank after)^2, and its p-value a permutation
  test of that largest saving, the runs shuffled (seeded), so it accounts for the best of m - 1 splits having
  been chosen. The split is then the one leaving the least absolute deviation from each side's median. Runs,
  not repeats, are shuffled: a run's repeats share its runner state, and the noise between runs is what a
  change must stand out from.
- Quality measures: the split is sought on the runs' mean scores, and tested like `compare` tests a drop: paired
  by query, each query's mean score after the split minus before, a one-sample t-test over the queries,
  Bonferroni-corrected for the splits the segment offered (m - 1). A difference under the scores' resolution
  (SCORE_RESOLUTION, 1e-6: rounding of one served target's identical runs) is no change.

Each change point's size is after / before (ratio figures) or after - before (differences) of the two
neighbouring segments' means, with a 95% percentile-bootstrap interval (seeded): runs resampled in each segment
(and each run's repeats, when every run has as many), or queries resampled for quality (paired).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from bench.core.resample import CONFIDENCE, seeded_generator
from bench.history.series import Gate, Observation, Scale, Series

ALPHA = 0.01  # each split's test: the false-alarm rate of a series without a change
PERMUTATIONS = 999
BOOTSTRAP = 2000
WINSOR = 3.0
BATCH, EXCEEDED = 100, 10  # shuffles drawn at a time; a test stops once this many shuffles saved as much
# A per-query score difference under this is no change: the scores' own resolution. Ranking measures on [0, 1]
# move by ~1e-3 when one document moves one rank; a float32 score's rounding is ~6e-8. Two runs of one served
# target (same cache) differed by rounding alone, and a t-test on those differences said p 2.4e-05 for +0.0000
SCORE_RESOLUTION = 1e-6


@dataclass(frozen=True)
class DetectorSettings:
    alpha: float = ALPHA
    permutations: int = PERMUTATIONS
    bootstrap: int = BOOTSTRAP
    seed: int = 0


DEFAULT_SETTINGS = DetectorSettings()


@dataclass(frozen=True)
class ChangePoint:
    """Where a series changed: the first observation of the new segment and how much it moved."""

    position: int  # index in the series' observations
    run: int  # that observation's run (its index in the history)
    size: float  # after / before (ratio figures) or after - before (differences)
    low: float  # 95% bootstrap interval of the size
    high: float
    p_value: float
    before: float  # mean of the segment before (run figures)
    after: float  # mean of the segment after
    test: str  # how the p-value was found


def _savings(data: np.ndarray) -> np.ndarray:
    """For each row, the l2 cost each split k = 1..m-1 saves: k(m-k)/m x (mean of the first k - mean of the rest)^2."""
    m = data.shape[-1]
    k = np.arange(1, m)
    left = np.cumsum(data, axis=-1)[..., :-1]
    total = data.sum(axis=-1, keepdims=True)
    gap = left / k - (total - left) / (m - k)
    saved: np.ndarray = k * (m - k) / m * gap**2
    return saved


def _prefix_deviations(values: np.ndarray) -> np.ndarray:
    """For k = 1..m: the absolute deviation of the first k values from their median."""
    m = len(values)
    rows = np.sort(np.where(np.tri(m, dtype=bool), values, np.inf), axis=1)  # row k-1: the first k, sorted
    k = np.arange(1, m + 1)
    medians = (rows[k - 1, (k - 1) // 2] + rows[k - 1, k // 2]) / 2
    deviations: np.ndarray = np.where(np.isfinite(rows), np.abs(rows - medians[:, None]), 0.0).sum(axis=1)
    return deviations


def _l1_split(values: np.ndarray) -> int:
    """The split that leaves the least absolute deviation from each side's median: robust to a wild run, and
    exact where the two sides do not overlap (the ranks' saving leans to the middle of the segment)."""
    left, right = _prefix_deviations(values)[:-1], _prefix_deviations(values[::-1])[::-1][1:]
    costs = left + right
    return int(np.argmin(costs)) + 1


def _best_split(values: np.ndarray) -> tuple[int, float]:
    saved = _savings(values)
    k = int(np.argmax(saved))
    return k + 1, float(saved[k])


def _permutation_p(ranks: np.ndarray, observed: float, rng: np.random.Generator, permutations: int) -> float:
    """The share of shuffles of the segment whose best split saves at least as much (the observed one counted).
    Sequential (Besag and Clifford 1991): shuffles are drawn in batches, and once EXCEEDED of them have saved as
    much the p-value is their share so far, an exact p-value that spares the shuffles a clear no-change needs."""
    exceeded = drawn = 0
    while drawn < permutations:
        batch = min(BATCH, permutations - drawn)
        shuffled = rng.permuted(np.broadcast_to(ranks, (batch, len(ranks))), axis=1)
        hits = (_savings(shuffled).max(axis=1) >= observed * (1 - 1e-12)).cumsum()
        if exceeded + hits[-1] >= EXCEEDED:
            return EXCEEDED / (drawn + 1 + int(np.argmax(exceeded + hits >= EXCEEDED)))
        exceeded, drawn = exceeded + int(hits[-1]), drawn + batch
    return (1 + exceeded) / (permutations + 1)


def _robust(values: np.ndarray) -> tuple[np.ndarray, str]:
    """The figures a segment is tested on: each side of its best l1 split clipped to WINSOR robust standard
    deviations (1.4826 x MAD of the runs about their own side's median) of that side's median, so a wild run counts
    as a large one, not as its size, while a real step keeps its size (clipping about the whole segment's median
    would flatten a step many times the noise onto its clip); ranks where most runs are equal."""
    k = _l1_split(values) if len(values) >= 2 else len(values)
    centres = np.concatenate([np.full(k, np.median(values[:k])), np.full(len(values) - k, np.median(values[k:]))])
    spread = 1.4826 * float(np.median(np.abs(values - centres)))
    if spread <= 0:
        return stats.rankdata(values), "ranks"
    clipped = np.clip(values, centres - WINSOR * spread, centres + WINSOR * spread)
    return clipped, f"clipped at ±{WINSOR:g} robust sd of each side"


def _paired_p(scores: np.ndarray, k: int) -> float:
    """Paired by query: each query's mean after the split minus before, one-sample t-test over the queries; a
    difference under SCORE_RESOLUTION is none (rounding), and so is a mean difference under it."""
    diff = scores[k:].mean(axis=0) - scores[:k].mean(axis=0)
    diff = np.where(np.abs(diff) < SCORE_RESOLUTION, 0.0, diff)
    if not np.any(diff) or abs(float(diff.mean())) < SCORE_RESOLUTION:
        return 1.0
    if np.ptp(diff) == 0:  # every query moved by the same amount: no doubt at all
        return 0.0
    return float(stats.ttest_1samp(diff, 0.0).pvalue)


def _split_test(series: Series, start: int, end: int, settings: DetectorSettings) -> tuple[int, float, str] | None:
    """The best split of observations [start, end) and its p-value (None: nothing to split)."""
    m = end - start
    if m < 2:
        return None
    if series.gate == Gate.QUALITY and series.qids:
        scores = np.array([o.samples for o in series.observations[start:end]], dtype=np.float64)
        k, saved = _best_split(scores.mean(axis=1))
        if saved <= 0:
            return None
        p = min(1.0, _paired_p(scores, k) * (m - 1))
        return start + k, p, f"paired t-test by query, x{m - 1} splits (Bonferroni)"
    values = np.array(series.values[start:end], dtype=np.float64)
    tested, kind = _robust(values)
    saved = float(_savings(tested).max())
    if saved <= 0:
        return None
    rng = seeded_generator(settings.seed, series.name, f"{start}:{end}")
    p = _permutation_p(tested, saved, rng, settings.permutations)
    return start + _l1_split(values), p, f"permutation of runs (up to {settings.permutations} shuffles), {kind}"


def change_positions(series: Series, settings: DetectorSettings = DEFAULT_SETTINGS) -> list[tuple[int, float, str]]:
    """The change points' positions in the series, each with its p-value and test, in order."""
    found: list[tuple[int, float, str]] = []
    pending = [(0, len(series.observations))]
    while pending:
        start, end = pending.pop()
        tested = _split_test(series, start, end, settings)
        if tested is None or tested[1] >= settings.alpha:
            continue
        found.append(tested)
        pending += [(start, tested[0]), (tested[0], end)]
    return sorted(found)


def detect(series: Series, settings: DetectorSettings = DEFAULT_SETTINGS) -> list[ChangePoint]:
    """Every change point of the series with its size, interval, p-value and neighbouring segments' means."""
    positions = change_positions(series, settings)
    bounds = [0, *(p for p, _, _ in positions), len(series.observations)]
    found: list[ChangePoint] = []
    for i, (position, p, test) in enumerate(positions):
        before, after = series.observations[bounds[i] : position], series.observations[position : bounds[i + 2]]
        rng = seeded_generator(settings.seed, series.name, "size", str(position))
        size, low, high, mean_before, mean_after = _size(series, before, after, rng, settings.bootstrap)
        found.append(ChangePoint(position, after[0].run, size, low, high, p, mean_before, mean_after, test))
    return found


def runs_since_last_change(series: Series, settings: DetectorSettings = DEFAULT_SETTINGS) -> list[int]:
    """The runs (indices in the history) of the series' newest segment: those measured since its last change point."""
    positions = change_positions(series, settings)
    start = positions[-1][0] if positions else 0
    return [o.run for o in series.observations[start:]]


def _change(series: Series, before: float, after: float) -> float:
    if series.scale == Scale.RATIO:
        return after / before if before else math.nan
    return after - before


def _size(
    series: Series, before: list[Observation], after: list[Observation], rng: np.random.Generator, resamples: int
) -> tuple[float, float, float, float, float]:
    """The change's size, its 95% bootstrap interval, and the two segments' means."""
    if series.gate == Gate.QUALITY and series.qids:
        a = np.array([o.samples for o in before], dtype=np.float64).mean(axis=0)
        b = np.array([o.samples for o in after], dtype=np.float64).mean(axis=0)
        idx = rng.integers(0, len(a), size=(resamples, len(a)))
        draws = b[idx].mean(axis=1) - a[idx].mean(axis=1)
        mean_a, mean_b = float(a.mean()), float(b.mean())
    else:
        draws_a, draws_b = _resampled_means(before, rng, resamples), _resampled_means(after, rng, resamples)
        with np.errstate(divide="ignore", invalid="ignore"):
            draws = draws_b / draws_a if series.scale == Scale.RATIO else draws_b - draws_a
        mean_a = float(np.mean([o.value for o in before]))
        mean_b = float(np.mean([o.value for o in after]))
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.nanpercentile(draws, [tail, 100 - tail])
    return _change(series, mean_a, mean_b), float(low), float(high), mean_a, mean_b


def _resampled_means(segment: list[Observation], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The segment's mean figure over `resamples` draws of its runs with replacement; where every run holds as
    many repeats (two or more), each drawn run's repeats are drawn again too (both levels of the noise)."""
    counts = {len(o.samples) for o in segment}
    runs = rng.integers(0, len(segment), size=(resamples, len(segment)))
    if len(counts) == 1 and (repeats := counts.pop()) >= 2:
        samples = np.array([o.samples for o in segment], dtype=np.float64)  # runs x repeats
        picks = rng.integers(0, repeats, size=(resamples, len(segment), repeats))
        drawn: np.ndarray = samples[runs[..., None], picks].mean(axis=(1, 2))
        return drawn
    values = np.array([o.value for o in segment], dtype=np.float64)
    means: np.ndarray = values[runs].mean(axis=1)
    return means
