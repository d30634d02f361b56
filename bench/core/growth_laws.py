"""The growth laws' shapes, latency = a + b·f(n), in one place: `bench/grow/laws.py` fits and chooses them; a report
draws a fitted law from its record alone through `predict` (the report's layer cannot import the fitting's)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

import numpy as np


class LawName(StrEnum):
    """A growth law's name, as the grow records write it (GrowthLaw.law, credible_laws)."""

    CONSTANT = "constant"
    LOG = "log"
    LINEAR = "linear"
    N_LOG_N = "n log n"
    QUADRATIC = "quadratic"


# name -> f(n); in order of complexity, the simplest first (ties go to it)
LAWS: dict[LawName, Callable[[np.ndarray], np.ndarray]] = {
    LawName.CONSTANT: lambda n: np.zeros_like(n, dtype=float),
    LawName.LOG: lambda n: np.log(n),
    LawName.LINEAR: lambda n: n.astype(float),
    LawName.N_LOG_N: lambda n: n * np.log(n),
    LawName.QUADRATIC: lambda n: n.astype(float) ** 2,
}


def predict(law: LawName, a: float, b: float, n: float | np.ndarray) -> np.ndarray:
    """The law's latency at size(s) n."""
    return a + b * LAWS[law](np.asarray(n, dtype=float))
