"""Is the newest run out of line? A prediction bound from the runs since the last change point before it.

The change-point test works on ranks: among n runs one run at the end reaches p = 1/n at best, so the newest run
alone is never a change point, however large its drop. A CI step asks something else: is *this* run out of line
with the runs it should resemble? Those runs are the ones since the last change point before it (at least
MIN_REFERENCE of them, the newest MAX_REFERENCE); the newest run is out of line when it lies past a one-sided
prediction bound of their distribution, on the side its limit guards, at the level given (the analysis gives
the bound 0.8 of the detector's alpha: the change points a newest run tips take the rest).

The bound comes from the reference runs' own spread (issue 45: a bound drawn from a heavy-tailed noise model lay
at x0.50 of the median over 8 runs at ±6% and passed a run 12.7% below it). Centre: their median; spread: the
root mean square of their distances from the median, each distance clipped at CLIP robust spreads (1.4826 x MAD):
one wild run counts as a large run, not as its size, while the spread keeps most of the standard deviation's
efficiency (the MAD alone over 8 runs is so uncertain that its bound lies 4.7 spreads out at 1%). The newest run's
distance from the centre in such spreads is a pivot whose distribution, for normal noise at any level and scale,
is simulated (seeded, SIMULATED draws) for each of SIMULATED_RUNS (a count between two bounded as the smaller): the
bound is its (1 - alpha) quantile, so its false-alarm rate on normal noise is alpha with the median's and the
spread's own errors over few runs counted. On heavier-tailed noise it raises more: benchmarks/bench_history_newest.py
measures both, and docs/ci.md states them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from bench.history.series import Scale, Series

MIN_REFERENCE = 8  # runs since the last change point: fewer give a spread too uncertain to bound anything
MAX_REFERENCE = 50  # the newest runs of a long segment: the bound follows a runner that drifts slowly
MAD_SD = 1.4826  # a MAD in standard deviations of a normal distribution
CLIP = 3.0  # robust spreads: a reference run farther from the median counts as this far (as the detector clips)
SIMULATED = 40_000  # draws of the pivot per number of reference runs: 320 beyond the bound at 0.008
# the numbers of runs the pivot is simulated for; a count between two is bounded as the smaller one (a slightly
# wider bound, fewer false alarms), so that a history of many segment lengths simulates a few, not dozens
SIMULATED_RUNS = (8, 9, 10, 12, 14, 16, 20, 25, 30, 40, 50)


@dataclass(frozen=True)
class OutOfLine:
    """The newest run against the runs before it since their last change point."""

    reference_runs: tuple[int, ...]  # the runs (indices in the history) the bound is drawn from
    centre: float  # their median figure
    bound: float  # the prediction bound on the side the limit guards (figure units)
    value: float  # the newest run's figure
    p_value: float  # the share of the noise model's runs as far out, towards the guarded side
    alpha: float
    past_bound: bool
    spread: float = 0.0  # the reference runs' spread about their median (figure units): what the bound is drawn from

    @property
    def size(self) -> float:
        return self.value / self.centre


def spread(figures: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Each row's spread about its centre: the root mean square distance, distances clipped at CLIP x 1.4826 x
    MAD (not clipped where the MAD is 0: most runs equal, the others' distances are all there is)."""
    distances = np.abs(figures - centre[..., None])
    mad = MAD_SD * np.median(distances, axis=-1)
    clipped = np.where(mad[..., None] > 0, np.minimum(distances, CLIP * mad[..., None]), distances)
    result: np.ndarray = np.sqrt(np.sum(clipped**2, axis=-1) / (figures.shape[-1] - 1))
    return result


def _pivots(runs: int) -> np.ndarray:
    """(newest - median) / spread of `runs` reference runs (or the largest of SIMULATED_RUNS below), sorted,
    over SIMULATED histories of normal noise."""
    return _simulated(max(n for n in SIMULATED_RUNS if n <= runs))


@functools.lru_cache(maxsize=len(SIMULATED_RUNS))
def _simulated(runs: int) -> np.ndarray:
    draws = np.random.default_rng(runs).standard_normal(size=(SIMULATED, runs + 1))
    centre = np.median(draws[:, :runs], axis=1)
    pivots: np.ndarray = np.sort((draws[:, runs] - centre) / spread(draws[:, :runs], centre))
    return pivots


def tail_quantile(alpha: float, runs: int) -> float:
    """How many spreads past the median the one-sided bound lies, for `runs` reference runs."""
    return float(np.quantile(_pivots(runs), 1 - alpha))


def out_of_line(series: Series, reference: slice, lower_is_worse: bool, alpha: float) -> OutOfLine | None:
    """The newest observation against those in `reference` (None: too few runs, or a figure not on a ratio scale)."""
    runs = series.observations[reference][-MAX_REFERENCE:]
    newest = series.observations[-1]
    if series.scale != Scale.RATIO or len(runs) < MIN_REFERENCE:
        return None
    figures = np.array([o.value for o in runs], dtype=np.float64)
    centre = float(np.median(figures))
    width = float(spread(figures, np.array(centre)))
    sign = -1.0 if lower_is_worse else 1.0
    q = tail_quantile(alpha, len(runs))
    deviation = sign * (newest.value - centre)  # > 0: towards the side the limit guards
    if width > 0:
        pivots = _pivots(len(runs))
        beyond = len(pivots) - int(np.searchsorted(pivots, deviation / width, side="left"))
        p, past = (1 + beyond) / (len(pivots) + 1), deviation > q * width
    else:  # identical reference runs: any step away from them, towards the guarded side, is out of line
        p, past = (0.0, True) if deviation > 0 else (1.0, False)
    reference_runs = tuple(o.run for o in runs)
    return OutOfLine(reference_runs, centre, centre + sign * q * width, newest.value, p, alpha, past, width)


def runs_to_confirm(reference: int, alpha: float) -> int:
    """The fewest runs at the end of a series that the change-point test can call a change after `reference` runs:
    its permutation p-value is at least 1 / C(reference + k, k), all k of them past every earlier run."""
    k = 1
    while math.comb(reference + k, k) * alpha <= 1:
        k += 1
    return k


POWER = 0.8  # the power a count of runs "that would decide" is reckoned at


def runs_to_decide(found: OutOfLine, step: float, alpha: float) -> int | None:
    """Runs at a level `step` (relative, e.g. 0.05 for a limit of x0.95) from the centre that a one-sided test at
    `alpha` on their mean against the reference runs' would tell apart from none with 80% power, at the spread
    measured (normal theory: the step must be (z(1 - alpha) + z(0.8)) x spread x sqrt(1/k + 1/m) for k new runs
    and m reference runs). None where no number of new runs would: the m reference runs alone are too few."""
    from scipy import stats  # imported here: ~0.6 s that a history with nothing undecided does not need

    z = float(stats.norm.ppf(1 - alpha) + stats.norm.ppf(POWER))
    if found.spread <= 0:
        return 1
    room = (step * found.centre / (z * found.spread)) ** 2 - 1 / len(found.reference_runs)
    return math.ceil(1 / room) if room > 0 else None


def bound_text(found: OutOfLine) -> str:
    """`306.9 (x0.873 of the median 351.5 of 8 runs), bound 311.2 (one-sided 0.8%, spread 11.55)`."""
    runs = len(found.reference_runs)
    return (
        f"newest {found.value:.4g} (×{found.size:.3f} of the median {found.centre:.4g} of {runs} runs), "
        f"out-of-line bound {found.bound:.4g} (one-sided {found.alpha:.1%} prediction bound, spread {found.spread:.4g})"
    )


def describe(found: OutOfLine) -> str:
    """The out-of-line verdict in words, with what the bound rests on."""
    runs = len(found.reference_runs)
    confirm = runs_to_confirm(runs, found.alpha)
    return (
        f"out of line (1 run: a change or an outlier; a change point once {confirm} runs confirm it): "
        f"{found.value:.4g} is past the {1 - found.alpha:.1%} prediction bound {found.bound:.4g} of the {runs} runs "
        f"since the last change point (median {found.centre:.4g}, spread {found.spread:.4g}, p = {found.p_value:.2g})"
    )
