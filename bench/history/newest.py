"""Is the newest run out of line? A prediction bound from the runs since the last change point before it.

The change-point test works on ranks: among n runs one run at the end reaches p = 1/n at best, so the newest run
alone is never a change point, however large its drop. A CI step asks something else: is *this* run out of line
with the runs it should resemble? Those runs are the ones since the last change point before it (at least
MIN_REFERENCE of them, the newest MAX_REFERENCE); the newest run is out of line when it lies past a one-sided
prediction bound of their distribution, on the side its limit guards, at the level given (the analysis gives
half the detector's alpha: the change points a newest run tips take the other half).

The bound is robust and made for the noise measured between CI runs here, which is heavy-tailed: the reference
runs' centre is their median and their spread 1.4826 x MAD; the newest run's distance from the centre in spreads is
a pivot whose distribution, for noise that is a Student t with 3 degrees of freedom at any level and scale, is found
by simulation (seeded, SIMULATED draws) for each of SIMULATED_RUNS (a number of runs between two is bounded as the
smaller): the bound is its (1 - alpha) quantile, the p-value its tail share. That counts the median's and the MAD's
own errors over few runs, which a normal-theory interval leaves out (its false-alarm rate at 8 runs was 1.6 to 2.5
times the stated one); on normal noise the bound is conservative. benchmarks/bench_history_newest.py measures the
false-alarm rate and the power.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from bench.history.series import Scale, Series

MIN_REFERENCE = 8  # runs since the last change point: fewer give a spread too uncertain to bound anything
MAX_REFERENCE = 50  # the newest runs of a long segment: the bound follows a runner that drifts slowly
TAIL_DOF = 3  # the noise model's tails: Student t, 3 degrees of freedom, as measured between runs here
MAD_SD = 1.4826  # a MAD in standard deviations of a normal distribution
SIMULATED = 20_000  # draws of the pivot per number of reference runs: 100 beyond the bound at 0.005
# the numbers of runs the pivot is simulated for; a count between two is bounded as the smaller one (a slightly
# wider bound, fewer false alarms), so that a history of many segment lengths simulates a few, not dozens
SIMULATED_RUNS = (8, 10, 12, 16, 20, 30, 50)


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

    @property
    def size(self) -> float:
        return self.value / self.centre


def _pivots(runs: int) -> np.ndarray:
    """(newest - median) / (1.4826 x MAD) of `runs` reference runs (or the largest of SIMULATED_RUNS below),
    sorted, over SIMULATED histories of t3 noise."""
    return _simulated(max(n for n in SIMULATED_RUNS if n <= runs))


@functools.lru_cache(maxsize=len(SIMULATED_RUNS))
def _simulated(runs: int) -> np.ndarray:
    draws = np.random.default_rng(runs).standard_t(TAIL_DOF, size=(SIMULATED, runs + 1))
    centre = np.median(draws[:, :runs], axis=1)
    spread = MAD_SD * np.median(np.abs(draws[:, :runs] - centre[:, None]), axis=1)
    pivots: np.ndarray = np.sort((draws[:, runs] - centre) / spread)
    return pivots


def tail_quantile(alpha: float, runs: int) -> float:
    """How many robust spreads (1.4826 x MAD) past the median the one-sided bound lies, for `runs` reference runs."""
    return float(np.quantile(_pivots(runs), 1 - alpha))


def out_of_line(series: Series, reference: slice, lower_is_worse: bool, alpha: float) -> OutOfLine | None:
    """The newest observation against those in `reference` (None: too few runs, or a figure not on a ratio scale)."""
    runs = series.observations[reference][-MAX_REFERENCE:]
    newest = series.observations[-1]
    if series.scale != Scale.RATIO or len(runs) < MIN_REFERENCE:
        return None
    figures = np.array([o.value for o in runs], dtype=np.float64)
    centre = float(np.median(figures))
    spread = MAD_SD * float(np.median(np.abs(figures - centre)))
    sign = -1.0 if lower_is_worse else 1.0
    q = tail_quantile(alpha, len(runs))
    deviation = sign * (newest.value - centre)  # > 0: towards the side the limit guards
    if spread > 0:
        pivots = _pivots(len(runs))
        beyond = len(pivots) - int(np.searchsorted(pivots, deviation / spread, side="left"))
        p, past = (1 + beyond) / (len(pivots) + 1), deviation > q * spread
    else:  # identical reference runs: any step away from them, towards the guarded side, is out of line
        p, past = (0.0, True) if deviation > 0 else (1.0, False)
    reference_runs = tuple(o.run for o in runs)
    return OutOfLine(reference_runs, centre, centre + sign * q * spread, newest.value, p, alpha, past)


def runs_to_confirm(reference: int, alpha: float) -> int:
    """The fewest runs at the end of a series that the change-point test can call a change after `reference` runs:
    its permutation p-value is at least 1 / C(reference + k, k), all k of them past every earlier run."""
    k = 1
    while math.comb(reference + k, k) * alpha <= 1:
        k += 1
    return k


def describe(found: OutOfLine) -> str:
    """The out-of-line verdict in words, with what the bound rests on."""
    runs = len(found.reference_runs)
    confirm = runs_to_confirm(runs, found.alpha)
    return (
        f"out of line (1 run: a change or an outlier; a change point once {confirm} runs confirm it): "
        f"past the {1 - found.alpha:.1%} prediction bound {found.bound:.4g} of the {runs} runs since the last change "
        f"point (median {found.centre:.4g}, p = {found.p_value:.2g})"
    )
