"""Growth laws of latency against knowledge-base size, chosen by held-out error.

Each law is latency = a + b·f(n), f one of: constant (b = 0), log n, n, n log n, n². Each is fitted by least
squares on relative error (a latency ladder spans decades: a plain fit would follow its largest rung alone).
The law chosen is the one that best predicts each rung from the rungs below it (rolling origin: rung k from rungs
1..k-1, for k from 3), the simplest among those within 5% of the best: a law is judged by what it did not see,
which is what an extrapolation asks of it.

The choice is not always the rungs' to make: when growth shows only in the last rung or two (a fixed cost per query
that dominates the small rungs), no fold can see it and a constant may win, while a law that would extrapolate
well is almost as good on the folds. So every law whose held-out error is within CREDIBLE times the best's, and
whose fitted latency does not fall with size, is kept as *credible*: an extrapolation is stated with the range the
credible laws give (`spread`, `reaches_range`), and is trustworthy only where that range is narrow.

>>> sizes = np.array([1e3, 2e3, 4e3, 8e3])
>>> fit = choose_law(sizes, 5 + 0.01 * sizes)
>>> fit.law, round(fit.b, 4)
('linear', 0.01)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bench.core.growth_laws import LAWS, LawName, predict

MIN_RUNGS = 3  # two to fit a two-parameter law, one more to judge it on
TIE = 1.05  # a law within 5% of the best held-out error counts as as good: the simpler one is chosen
CREDIBLE = 2.0  # a law at most twice as wrong as the best on unseen rungs is not ruled out by them


@dataclass(frozen=True)
class Fit:
    law: LawName
    a: float
    b: float
    held_out_error: float  # mean relative error of the rolling-origin predictions
    fit_error: float  # relative RMS error on every point
    points: int
    #: the credible laws (the chosen one among them) as (law, a, b): those the rungs do not rule out
    credible: tuple[tuple[LawName, float, float], ...] = ()

    def predict(self, n: float | np.ndarray) -> np.ndarray:
        return predict(self.law, self.a, self.b, n)

    def reaches(self, latency: float) -> float | None:
        """The size at which the law's latency reaches `latency` (None: it never does: a law that does not grow)."""
        return _reaches(self.law, self.a, self.b, latency)

    def spread(self, n: float) -> tuple[float, float]:
        """The lowest and highest latency the credible laws predict at size n."""
        predicted = [predict(law, a, b, n).item() for law, a, b in self.credible]
        return min(predicted), max(predicted)

    def reaches_range(self, latency: float) -> tuple[float | None, float | None]:
        """The smallest and largest size at which a credible law reaches `latency` (None: none / one never does)."""
        sizes = [_reaches(law, a, b, latency) for law, a, b in self.credible]
        found = [s for s in sizes if s is not None]
        return (min(found) if found else None), (None if None in sizes else max(found))


def _reaches(law: LawName, a: float, b: float, latency: float) -> float | None:
    if law == LawName.CONSTANT or b <= 0:
        return None
    if predict(law, a, b, 1.0).item() >= latency:
        return 1.0
    low, high = 1.0, 10.0
    while predict(law, a, b, high).item() < latency:  # every law but the constant grows without bound
        low, high = high, high * 10.0
        if high > 1e18:
            return None
    for _ in range(200):  # bisection in log space: relative precision, whatever the scale
        middle = math.sqrt(low * high)
        low, high = (middle, high) if predict(law, a, b, middle).item() < latency else (low, middle)
    return high


def fit_law(law: LawName, sizes: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """(a, b) of `law` minimising the relative squared error over the points."""
    weight = 1.0 / np.maximum(np.abs(values), 1e-12)
    if law == LawName.CONSTANT:
        a = float(np.sum(values * weight**2) / np.sum(weight**2))
        return a, 0.0
    design = np.column_stack([np.ones_like(sizes, dtype=float), LAWS[law](sizes)]) * weight[:, None]
    (a, b), *_ = np.linalg.lstsq(design, values * weight, rcond=None)
    return float(a), float(b)


def held_out_error(law: LawName, sizes: np.ndarray, values: np.ndarray) -> float:
    """Mean relative error predicting rung k from rungs 1..k-1, for every k from the third."""
    errors = []
    for k in range(MIN_RUNGS - 1, len(sizes)):
        a, b = fit_law(law, sizes[:k], values[:k])
        predicted = a + b * LAWS[law](sizes[k : k + 1])[0]
        errors.append(abs(predicted - values[k]) / max(abs(values[k]), 1e-12))
    return float(np.mean(errors))


def choose_law(sizes: np.ndarray, values: np.ndarray) -> Fit | None:
    """The law that best predicts unseen rungs (None: fewer than MIN_RUNGS points)."""
    order = np.argsort(sizes)
    sizes, values = np.asarray(sizes, dtype=float)[order], np.asarray(values, dtype=float)[order]
    if len(sizes) < MIN_RUNGS:
        return None
    held = {law: held_out_error(law, sizes, values) for law in LAWS}
    best = min(held.values())
    law = next(name for name in LAWS if held[name] <= best * TIE + 1e-12)
    fits = {name: fit_law(name, sizes, values) for name in LAWS}
    credible = tuple(
        (name, *fits[name])
        for name in LAWS
        if name == law or (held[name] <= best * CREDIBLE + 1e-12 and fits[name][1] >= 0)
    )
    a, b = fits[law]
    fitted = a + b * LAWS[law](sizes)
    relative = (fitted - values) / np.maximum(np.abs(values), 1e-12)
    return Fit(law, a, b, held[law], float(np.sqrt(np.mean(relative**2))), len(sizes), credible)
