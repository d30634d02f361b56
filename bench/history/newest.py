"""Is the newest run out of line? A prediction bound from the runs since the last change point before it.

The change-point test works on ranks: among n runs one run at the end reaches p = 1/n at best, so the newest run
alone is never a change point, however large its drop. A CI step asks something else: is *this* run out of line
with the runs it should resemble? Those runs are the ones since the last change point before it (at least
MIN_REFERENCE of them); the newest run is out of line when it lies past a one-sided prediction bound of their
distribution, on the side its limit guards, at `alpha` (the detector's level).

The bound is robust and made for the noise measured between CI runs here, which is heavy-tailed: figures are
taken as logs (a ratio of speeds), their centre is the reference runs' median and their spread 1.4826 x MAD; the
bound is the centre plus q spreads, q the (1 - alpha) quantile of a Student t with 3 degrees of freedom in units
of its own 1.4826 x MAD, widened by sqrt(1 + pi/(2n)) for the median's own error over n runs. On normal noise this
is conservative; benchmarks/bench_history_newest.py measures both false-alarm rates and the power.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from bench.history.series import Scale, Series

MIN_REFERENCE = 8  # runs since the last change point: fewer give a spread too uncertain to bound anything
TAIL_DOF = 3  # the noise model's tails: Student t, 3 degrees of freedom, as measured between runs here
MAD_SD = 1.4826  # a MAD in standard deviations of a normal distribution


@dataclass(frozen=True)
class OutOfLine:
    """The newest run against the runs before it since their last change point."""

    reference_runs: tuple[int, ...]  # the runs (indices in the history) the bound is drawn from
    centre: float  # their median figure
    bound: float  # the prediction bound on the side the limit guards (figure units)
    value: float  # the newest run's figure
    p_value: float  # the newest run's one-sided tail probability under the noise model
    alpha: float

    @property
    def size(self) -> float:
        return self.value / self.centre

    @property
    def past_bound(self) -> bool:
        return self.p_value < self.alpha


def _t_scale() -> float:
    """The noise model's 1.4826 x MAD in units of its own scale."""
    return MAD_SD * float(stats.t.ppf(0.75, TAIL_DOF))


def tail_quantile(alpha: float, runs: int) -> float:
    """How many robust spreads (1.4826 x MAD) past the centre the one-sided bound lies, for `runs` reference runs."""
    return float(stats.t.ppf(1 - alpha, TAIL_DOF)) / _t_scale() * math.sqrt(1 + math.pi / (2 * runs))


def out_of_line(series: Series, reference: slice, lower_is_worse: bool, alpha: float) -> OutOfLine | None:
    """The newest observation against those in `reference` (None: too few runs, or a figure not on a ratio scale)."""
    runs = series.observations[reference]
    newest = series.observations[-1]
    if series.scale != Scale.RATIO or len(runs) < MIN_REFERENCE or newest.value <= 0:
        return None
    logs = np.log([o.value for o in runs])
    centre = float(np.median(logs))
    spread = MAD_SD * float(np.median(np.abs(logs - centre)))
    sign = -1.0 if lower_is_worse else 1.0
    bound = centre + sign * tail_quantile(alpha, len(runs)) * spread
    deviation = sign * (math.log(newest.value) - centre)  # > 0: towards the side the limit guards
    if spread > 0:
        widened = spread / _t_scale() * math.sqrt(1 + math.pi / (2 * len(runs)))
        p = float(stats.t.sf(deviation / widened, TAIL_DOF))
    else:  # identical reference runs: any step away from them, towards the guarded side, is out of line
        p = 0.0 if deviation > 0 else 1.0
    reference_runs = tuple(o.run for o in runs)
    return OutOfLine(reference_runs, math.exp(centre), math.exp(bound), newest.value, p, alpha)


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
        f"past the {1 - found.alpha:.0%} prediction bound {found.bound:.4g} of the {runs} runs since the last change "
        f"point (median {found.centre:.4g}, p = {found.p_value:.2g})"
    )
