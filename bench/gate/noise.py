"""Load gates that know the noise: a throughput or p99 gate on points measured with `load --repeat N` on both
sides judges the ratio of the means over the repeats by its bootstrap interval (each side's repeats resampled
on their own), not one run against another.

- fail: the whole interval is past the limit (a regression is shown);
- pass: the whole interval is on the good side of it;
- inconclusive: the interval straddles the limit, i.e. this runner's noise is wider than the change the gate
  asks to detect; the verdict says how many repeats would resolve it. `compare --inconclusive pass|fail`
  chooses what it counts as.

    >>> from bench.core.resample import seeded_generator
    >>> v = throughput_verdict([100.0, 101.0, 99.0], [80.0, 81.0, 79.0], 0.95, seeded_generator(0, "doc"), 2000)
    >>> v.verdict, round(v.ratio.mean, 2)
    ('fail', 0.8)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.core import values
from bench.core.resample import RESAMPLES, Interval, ratio_interval, seeded_generator
from bench.results.schema import LatencySummary, LoadPointRecord

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
POLICIES = (PASS, FAIL)  # what an inconclusive verdict counts as (`compare --inconclusive`)
MAX_REPEATS = int(values.REPEATS.high)  # the most `load --repeat` takes: a suggestion beyond it says so


@dataclass(frozen=True)
class NoiseVerdict:
    figure: str  # throughput (texts/s) | p99
    verdict: str  # pass | fail | inconclusive
    ratio: Interval  # mean(current) / mean(baseline) over the repeats, 95% bootstrap interval
    limit: float  # the ratio the gate draws its line at: --min-throughput-ratio, or 1 + --max-p99-increase
    repeats: tuple[int, int]  # baseline, current
    spread: float  # the interval's half-width relative to the ratio: this runner's noise, as an A/A comparison shows it
    needed: int | None  # repeats per side that would resolve an inconclusive verdict; None: not inconclusive/never
    resamples: int

    @property
    def detect(self) -> float:
        """The change the gate asks to detect: 5% for a minimum ratio of 0.95 or a maximum p99 increase of 5%."""
        return abs(1 - self.limit)

    def message(self) -> str:
        what = "throughput" if self.figure == "throughput" else "p99"
        interval = f"×{self.ratio.mean:.3f} [{self.ratio.low:.3f}, {self.ratio.high:.3f}]"
        base = f"{what} {interval} over {self.repeats[0]}+{self.repeats[1]} repeats"
        if self.verdict != INCONCLUSIVE:
            side = "past" if self.verdict == FAIL else "clear of"
            return f"{base}: the whole interval is {side} the limit ×{self.limit:g}"
        if self.needed is None:
            resolve = "the means sit on the limit: no number of repeats would resolve it"
        elif self.needed > MAX_REPEATS:
            resolve = f"more than {MAX_REPEATS} repeats would be needed"
        else:
            resolve = f"{self.needed} repeats would resolve it"
        return (
            f"{base}: inconclusive: this runner's noise (A/A spread ±{self.spread:.1%}) is wider than the "
            f"{self.detect * 100:g}% you ask to detect; {resolve}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "verdict": self.verdict,
            "ratio": self.ratio.to_dict(),
            "limit": self.limit,
            "repeats": list(self.repeats),
            "spread": self.spread,
            "needed_repeats": self.needed,
            "resamples": self.resamples,
            "message": self.message(),
        }


def judge(interval: Interval, limit: float, higher_is_better: bool) -> str:
    """fail when the whole interval is on the bad side of `limit`, pass when it is all on the good side."""
    low, high = (interval.low, interval.high) if higher_is_better else (-interval.high, -interval.low)
    line = limit if higher_is_better else -limit
    if high < line:
        return FAIL
    if low > line:
        return PASS
    return INCONCLUSIVE


def repeats_needed(interval: Interval, limit: float, repeats: int) -> int | None:
    """Repeats per side for the interval to clear `limit` if the means stay where they are: its half-width
    shrinks as 1/sqrt(N). None when the mean sits on the limit (no number of repeats would do)."""
    gap = abs(interval.mean - limit)
    if gap == 0:
        return None
    half = (interval.high - interval.low) / 2
    return max(repeats + 1, math.ceil(repeats * (half / gap) ** 2))


def verdict(
    figure: str,
    base: Sequence[float],
    current: Sequence[float],
    limit: float,
    higher_is_better: bool,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
) -> NoiseVerdict | None:
    """The verdict on the ratio of means; None when the baseline's mean is 0 (no ratio)."""
    ratio = ratio_interval(base, current, rng, resamples)
    if ratio is None:
        return None
    result = judge(ratio, limit, higher_is_better)
    spread = (ratio.high - ratio.low) / 2 / ratio.mean if ratio.mean > 0 and math.isfinite(ratio.high) else math.inf
    needed = repeats_needed(ratio, limit, min(len(base), len(current))) if result == INCONCLUSIVE else None
    return NoiseVerdict(figure, result, ratio, limit, (len(base), len(current)), spread, needed, resamples)


def throughput_verdict(
    base: Sequence[float],
    current: Sequence[float],
    min_ratio: float,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
) -> NoiseVerdict | None:
    return verdict("throughput", base, current, min_ratio, True, rng, resamples)


def p99_verdict(
    base: Sequence[float],
    current: Sequence[float],
    max_increase: float,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
) -> NoiseVerdict | None:
    return verdict("p99", base, current, 1 + max_increase, False, rng, resamples)


def repeat_values(point: LoadPointRecord, figure: str, quantity: str) -> list[float] | None:
    """Each repeat's texts/s (`throughput`) or p99 of `quantity`; None when the point was not repeated (fewer
    than 2 repeats) or a repeat lacks the figure (no successful request in it)."""
    if len(point.repeats) < 2:
        return None
    found: list[float] = []
    for r in point.repeats:
        block: LatencySummary | None = getattr(r.latency_ms, quantity)
        value = r.throughput.texts_per_s if figure == "throughput" else block.p99 if block is not None else None
        if value is None or not math.isfinite(value) or value < 0:
            return None
        found.append(float(value))
    return found


def point_verdicts(
    base: LoadPointRecord,
    current: LoadPointRecord,
    quantity: str,
    min_ratio: float | None,
    max_increase: float | None,
    seed: int,
    label: str,
    resamples: int = RESAMPLES,
) -> list[NoiseVerdict] | None:
    """The verdicts of a point's gates (throughput, p99: those asked for) from the repeats on both sides;
    None when either side was not repeated: the gate then compares one run with one run, as before. Seeded by
    the point's name, so a verdict does not depend on which other points were compared."""
    gates = [("throughput", min_ratio, throughput_verdict), ("p99", max_increase, p99_verdict)]
    found: list[NoiseVerdict] = []
    for figure, limit, judge_figure in gates:
        if limit is None:
            continue
        b, c = repeat_values(base, figure, quantity), repeat_values(current, figure, quantity)
        if b is None or c is None:
            return None
        result = judge_figure(b, c, limit, seeded_generator(seed, label, figure), resamples)
        if result is not None:
            found.append(result)
    return found
