"""A p99 gate on repeats too short for their own p99 (issue 45): the answers of every repeat pooled, resampled.

A repeat of fewer than 100 answers has no p99 (bench.load.histograms.MIN_SAMPLES), so a point measured
`load --repeat 3` of 60 answers each had no p99 per repeat and `compare --max-p99-increase` gated it, and its
throughput beside it, on one run against one run, although both sides held 3 repeats. Here the p99 ratio is the
pooled points' p99s (what the check prints), and its interval a percentile bootstrap of each side's answers (its
merged histogram, resampled multinomially over its buckets, each side on its own). The answers' resampling sees
how far a p99 over that many answers moves, not the machine's state moving between repeats: the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.core.resample import CONFIDENCE, Interval
from bench.load import histograms
from bench.results.schema import LoadPointRecord

QUANTILE = 99.0


@dataclass(frozen=True)
class Answers:
    """A point's answers as its merged histogram holds them: each bucket's value (ms) and count."""

    values_ms: np.ndarray
    counts: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def p99(self) -> float:
        return float(self.values_ms[np.searchsorted(np.cumsum(self.counts), _target(self.total))])


def _target(total: int) -> int:
    """The rank of the p99 among `total` answers, as HdrHistogram counts it (get_target_count_at_percentile)."""
    return max(int(QUANTILE * total / 100 + 0.5), 1)


def answers(point: LoadPointRecord, quantity: str) -> Answers | None:
    """The point's answers of one latency quantity; None without a histogram or with too few for a p99."""
    encoded = point.histograms.get(quantity)
    if not encoded:
        return None
    recorded = histograms.recorded(histograms.decode(encoded))
    found = Answers(np.array([v for v, _ in recorded], dtype=np.float64) / 1000.0, np.array([n for _, n in recorded]))
    return found if found.total >= histograms.MIN_SAMPLES["p99"] else None


def _resampled_p99s(side: Answers, rng: np.random.Generator, resamples: int) -> np.ndarray:
    draws = rng.multinomial(side.total, side.counts / side.total, size=resamples)
    ranks = np.cumsum(draws, axis=1) >= _target(side.total)
    p99s: np.ndarray = side.values_ms[np.argmax(ranks, axis=1)]
    return p99s


def p99_ratio_interval(base: Answers, current: Answers, rng: np.random.Generator, resamples: int) -> Interval | None:
    """p99(current) / p99(base) with its percentile-bootstrap interval; None when the baseline's p99 is 0."""
    b, c = _resampled_p99s(base, rng, resamples), _resampled_p99s(current, rng, resamples)
    if base.p99() <= 0 or np.any(b <= 0):
        return None
    ratios = c / b
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return Interval(current.p99() / base.p99(), float(low), float(high))
