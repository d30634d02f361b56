"""Seeded percentile-bootstrap intervals over a few repeated measurements (load points measured N times).

Deterministic: every draw comes from a numpy Generator seeded by a number and the names it is for, so the
same repeats give the same interval on every machine and in every order of checks.

    >>> rng = seeded_generator(0, "example")
    >>> m = mean_interval([10.0, 11.0, 12.0], rng, resamples=2000)
    >>> m.mean, m.low <= m.mean <= m.high
    (11.0, True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000  # bootstrap resamples per interval (the resample count every record and output names)
CONFIDENCE = 0.95


def seeded_generator(seed: int, *names: str) -> np.random.Generator:
    """A generator that depends only on the seed and the names it is for (not on run order)."""
    key = int.from_bytes(hashlib.sha256("\0".join(names).encode()).digest()[:8], "little")
    return np.random.Generator(np.random.PCG64([seed, key]))


@dataclass(frozen=True)
class Interval:
    """A point estimate and its 95% percentile-bootstrap interval."""

    mean: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "low": self.low, "high": self.high}


def _resampled_means(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """The mean of each of `resamples` draws of len(values) values with replacement."""
    idx = rng.integers(0, len(values), size=(resamples, len(values)))
    means: np.ndarray = values[idx].mean(axis=1)
    return means


def _percentiles(draws: np.ndarray) -> tuple[float, float]:
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def mean_interval(values: Sequence[float], rng: np.random.Generator, resamples: int = RESAMPLES) -> Interval:
    """The mean of `values` and its percentile-bootstrap interval (one value: an interval of zero width)."""
    data = np.asarray(values, dtype=np.float64)
    if not len(data):
        raise ValueError("mean_interval of no values")
    return Interval(float(data.mean()), *_percentiles(_resampled_means(data, rng, resamples)))


def ratio_interval(
    base: Sequence[float], current: Sequence[float], rng: np.random.Generator, resamples: int = RESAMPLES
) -> Interval | None:
    """mean(current) / mean(base) and its interval, each side resampled on its own (the repeats of two runs
    are not paired). None when the baseline's mean is 0: no ratio. A resample whose baseline mean is 0
    has an infinite ratio, which the percentiles take as the extreme it is."""
    b, c = np.asarray(base, dtype=np.float64), np.asarray(current, dtype=np.float64)
    if not len(b) or not len(c) or b.mean() == 0:
        return None
    b_means, c_means = _resampled_means(b, rng, resamples), _resampled_means(c, rng, resamples)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(b_means > 0, c_means / np.where(b_means > 0, b_means, 1.0), np.inf)
    return Interval(float(c.mean() / b.mean()), *_percentiles(ratios))
