"""The growth laws' shapes, latency = a + b·f(n), in one place: `bench/grow/laws.py` fits and chooses them; a report
draws a fitted law from its record alone through `predict` (the report's layer cannot import the fitting's)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# name -> f(n); in order of complexity, the simplest first (ties go to it)
LAWS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "constant": lambda n: np.zeros_like(n, dtype=float),
    "log": lambda n: np.log(n),
    "linear": lambda n: n.astype(float),
    "n log n": lambda n: n * np.log(n),
    "quadratic": lambda n: n.astype(float) ** 2,
}


def predict(law: str, a: float, b: float, n: float | np.ndarray) -> np.ndarray:
    """The law's latency at size(s) n."""
    return a + b * LAWS[law](np.asarray(n, dtype=float))
