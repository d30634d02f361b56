"""Load gates that know the noise: a throughput or p99 gate on points measured with `load --repeat N` on both
sides judges the ratio of the means over the repeats by its bootstrap interval (each side's repeats resampled
on their own), not one run against another.

- fail: the whole interval is past the limit (a regression is shown);
- pass: the whole interval is on the good side of it;
- inconclusive: the interval straddles the limit, i.e. this runner's noise is wider than the change the gate
  asks to detect; the verdict says how many repeats a side (or, where the noise is between runs, runs of each
  build) would tell the limit's step from none with 80% power at the spread seen; one past the limit whose
  interval excludes no change is a likely regression, said first. `compare --inconclusive pass|fail` chooses
  what it counts as.

The repeats of one run are measured within seconds of each other, on one state of the machine; between two
runs a shared runner's neighbours change, so two runs of the same build differ by more than their repeats'
interval shows. `compare --calibration RUN` (A/A runs: the same sweep, same build, on this runner) measures
that noise between runs: the spread of each point's figure over the runs is its `NoiseFloor`, and a gated
interval is never narrower than it (one run per side is then judged too: its interval is the floor alone).

    >>> from bench.core.resample import seeded_generator
    >>> rng = seeded_generator(0, "doc")
    >>> v = verdict(Figure.THROUGHPUT, [100.0, 101.0, 99.0], [80.0, 81.0, 79.0], 0.95, True, rng, 2000)
    >>> str(v.verdict), round(v.ratio.mean, 2)
    ('fail', 0.8)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TypedDict

import numpy as np

from bench.core import values
from bench.core.resample import CONFIDENCE, RESAMPLES, Interval, ratio_interval, seeded_generator
from bench.gate.points import latency_p99
from bench.results.schema import LoadPointRecord


class Figure(StrEnum):
    """What a load gate judges: texts/s (higher is better), a p99 latency (lower is)."""

    THROUGHPUT = "throughput"
    P99 = "p99"


class Verdict(StrEnum):
    """An interval's verdict against its limit."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


MAX_REPEATS = int(values.REPEATS.high)  # the most `load --repeat` takes: a suggestion beyond it says so
MIN_RUNS = 3  # fewer calibration runs estimate the noise loosely (t(0.975, 1) is 12.7): said beside their floor


class NoiseFloorJson(TypedDict):
    """A calibration floor as compare's JSON writes it."""

    spread: float
    runs: int
    repeats: int
    loose: str | None


class NoiseVerdictJson(TypedDict):
    """A noise-aware gate's verdict as compare's JSON writes it (a load check's `figures.noise`)."""

    figure: Figure
    verdict: Verdict
    ratio: dict[str, float]  # mean, low, high
    limit: float
    repeats: list[int]  # baseline, current
    spread: float
    needed_repeats: int | None
    needed_runs: int | None
    likely_regression: bool
    pooled_answers: list[int] | None
    resamples: int
    calibration: NoiseFloorJson | None
    message: str


@dataclass(frozen=True)
class NoiseFloor:
    """How far one point's figure moves between two runs of the same build on this runner, from K A/A
    calibration runs: the 95% half-width of log(run / run), t(K-1) x sqrt(2) x the runs' standard deviation
    of log(figure) (the log: a ratio's noise is symmetric there; sqrt(2): a ratio has a run on each side; t: K
    runs estimate the spread, few of them loosely)."""

    half_width: float  # in log units: the ratio of two runs of the same build lies in exp(±half_width)
    runs: int  # the calibration runs that measured the point
    repeats: int  # repeats per point in those runs (1: not repeated): a gate measured otherwise is noisier or quieter
    source: str = "A/A runs"  # what the runs are, in words

    @property
    def spread(self) -> float:
        """The same as a relative half-width (±%), as an A/A comparison shows it."""
        return math.expm1(self.half_width)

    @property
    def loose(self) -> str:
        """Said beside the floor when fewer than MIN_RUNS runs measured it (empty otherwise)."""
        if self.runs >= MIN_RUNS:
            return ""
        return f"only {self.runs} runs, fewer than {MIN_RUNS}: a loose estimate; calibrate with five or more"

    def describe(self) -> str:
        repeats = f"{self.repeats} repeat{'s' if self.repeats != 1 else ''}"
        said = f"runner noise between runs ±{self.spread:.1%}, calibrated over {self.runs} {self.source} of {repeats}"
        return said + (f": {self.loose}" if self.loose else "")

    def to_dict(self) -> NoiseFloorJson:
        return {"spread": self.spread, "runs": self.runs, "repeats": self.repeats, "loose": self.loose or None}


def noise_floor(figures: Sequence[float], repeats: int) -> NoiseFloor | None:
    """The floor from one point's figure in each calibration run (each the mean over its repeats); None with
    fewer than two positive figures (nothing to spread)."""
    logs = np.log([f for f in figures if f > 0 and math.isfinite(f)])
    if len(logs) < 2:
        return None
    from scipy import stats  # imported here: ~0.6 s that a compare without calibration does not need

    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(logs) - 1))
    return NoiseFloor(t * math.sqrt(2) * float(np.std(logs, ddof=1)), len(logs), repeats)


@dataclass(frozen=True)
class NoiseVerdict:
    figure: Figure
    verdict: Verdict
    ratio: Interval  # mean(current) / mean(baseline) over the repeats, 95% bootstrap interval
    limit: float  # the ratio the gate draws its line at: --min-throughput-ratio, or 1 + --max-p99-increase
    repeats: tuple[int, int]  # baseline, current
    spread: float  # the interval's half-width relative to the ratio: this runner's noise, as an A/A comparison shows it
    needed: int | None  # repeats a side that tell the limit's step at 80% power; None: not inconclusive, or no spread
    resamples: int
    floor: NoiseFloor | None = None  # the runner's noise between runs (`compare --calibration`); None: not calibrated
    answers: tuple[int, int] | None = None  # p99 of repeats too short for their own: each side's answers pooled
    needed_runs: int | None = None  # runs of each build that would resolve it where the noise is between runs

    @property
    def between_runs(self) -> bool:
        """The calibrated noise between runs, not the repeats' own interval, sets the interval's width: more
        repeats cannot narrow it."""
        if self.floor is None:
            return False
        mean, floor = self.ratio.mean, self.floor.half_width + 1e-12  # 1e-12: the round trip through exp and log
        return math.log(mean / self.ratio.low) <= floor and math.log(self.ratio.high / mean) <= floor

    @property
    def likely_regression(self) -> bool:
        """Inconclusive, yet the ratio is past the limit and its interval excludes no change (1) on the bad side:
        a significant change the size of the limit or near it, that the gate cannot show to be past the limit."""
        if self.verdict != Verdict.INCONCLUSIVE:
            return False
        if self.figure == Figure.THROUGHPUT:
            return self.ratio.mean < self.limit and self.ratio.high < 1
        return self.ratio.mean > self.limit and self.ratio.low > 1

    def likely_text(self) -> str:
        """`throughput ×0.841 [0.720, 0.984] is past the limit ×0.95 and excludes no change`."""
        interval = f"×{self.ratio.mean:.3f} [{self.ratio.low:.3f}, {self.ratio.high:.3f}]"
        return f"{self.figure} {interval} is past the limit ×{self.limit:g} and excludes no change"

    @property
    def detect(self) -> float:
        """The change the gate asks to detect: 5% for a minimum ratio of 0.95 or a maximum p99 increase of 5%."""
        return abs(1 - self.limit)

    def message(self) -> str:
        what = self.figure
        interval = f"×{self.ratio.mean:.3f} [{self.ratio.low:.3f}, {self.ratio.high:.3f}]"
        base = f"{what} {interval} over {self.repeats[0]}+{self.repeats[1]} repeats"
        if self.answers is not None:
            base += (
                f"' {self.answers[0]}+{self.answers[1]} answers pooled (each repeat too short for its own p99: "
                "the interval is the answers' noise, not the machine's between repeats)"
            )
        if self.floor is not None:
            base += f" ({self.floor.describe()})"
        if self.verdict != Verdict.INCONCLUSIVE:
            side = "past" if self.verdict == Verdict.FAIL else "clear of"
            return f"{base}: the whole interval is {side} the limit ×{self.limit:g}"
        wanted = f"the {self.detect * 100:g}% you ask to detect"
        return f"{base}: inconclusive: {self._noise_named()} is wider than {wanted}; {self._resolve()}"

    def _noise_named(self) -> str:
        """The noise that made it inconclusive, one name for one figure: the calibrated noise between runs (said
        above with its figure) where it sets the interval; else the repeats' own spread, named as such beside a
        floor (two names for two figures: 'runner noise ±16.9%' and 'A/A spread ±15.7%' read as one)."""
        if self.floor is not None and self.between_runs:
            return f"the runner noise between runs (±{self.floor.spread:.1%})"
        if self.floor is not None:
            return f"the repeats' spread (±{self.spread:.1%}, wider than the runner noise between runs)"
        return f"this runner's noise (A/A spread ±{self.spread:.1%})"

    def _resolve(self) -> str:
        """What would decide an inconclusive verdict: runs of each build where the noise is between runs, else
        repeats a side; each the count that tells the limit's step from none with 80% power at the spread seen."""
        step = f"a {self.detect * 100:g}% step from none (80% power, at this spread)"
        if self.between_runs:
            runs = (
                f"{self.needed_runs} runs of each build" if self.needed_runs is not None else "more runs of each build"
            )
            return f"more repeats would not resolve it (the noise is between runs): {runs} would tell {step}"
        if self.needed is None:
            return "no number of repeats would resolve it (no spread to scale)"
        if self.needed > MAX_REPEATS:
            return f"more than {MAX_REPEATS} repeats would be needed ({self.needed} a side would tell {step})"
        return f"{self.needed} repeats a side would tell {step}"

    def to_dict(self) -> NoiseVerdictJson:
        return {
            "figure": self.figure,
            "verdict": self.verdict,
            "ratio": self.ratio.to_dict(),
            "limit": self.limit,
            "repeats": list(self.repeats),
            "spread": self.spread,
            "needed_repeats": self.needed,
            "needed_runs": self.needed_runs,
            "likely_regression": self.likely_regression,
            "pooled_answers": list(self.answers) if self.answers is not None else None,
            "resamples": self.resamples,
            "calibration": self.floor.to_dict() if self.floor is not None else None,
            "message": self.message(),
        }


def judge(interval: Interval, limit: float, higher_is_better: bool) -> Verdict:
    """fail when the whole interval is on the bad side of `limit`, pass when it is all on the good side."""
    low, high = (interval.low, interval.high) if higher_is_better else (-interval.high, -interval.low)
    line = limit if higher_is_better else -limit
    if high < line:
        return Verdict.FAIL
    if low > line:
        return Verdict.PASS
    return Verdict.INCONCLUSIVE


Z_CONFIDENCE = 1.959964  # z(0.975): a 95% interval's half-width in standard errors
Z_POWER = Z_CONFIDENCE + 0.841621  # + z(0.8): the standard errors a step must span to be told from none 80% of the time


def repeats_for_power(interval: Interval, limit: float, repeats: int) -> int | None:
    """Repeats a side for the ratio's interval to tell the limit's step from none with 80% power, at the spread the
    repeats showed: the interval's half-width (log units) scales as 1/sqrt(N) and must be step x z(0.975) /
    (z(0.975) + z(0.8)). None where the interval has no width to scale (or no limit step)."""
    step = abs(math.log(limit))
    if step == 0 or not 0 < interval.low < interval.high < math.inf:
        return None
    half = math.log(interval.high / interval.low) / 2
    return max(2, math.ceil(repeats * (half * Z_POWER / (Z_CONFIDENCE * step)) ** 2))


def runs_for_power(floor: NoiseFloor, limit: float) -> int | None:
    """Runs of each build whose means' ratio tells the limit's step from none with 80% power, at the noise between
    runs the floor measured (its standard deviation of log(figure): half-width / (t(K-1) x sqrt(2)))."""
    from scipy import stats

    step = abs(math.log(limit))
    if step == 0 or floor.runs < 2:
        return None
    sd = floor.half_width / (float(stats.t.ppf(0.5 + CONFIDENCE / 2, floor.runs - 1)) * math.sqrt(2))
    return max(2, math.ceil(2 * (Z_POWER * sd / step) ** 2))


def widened(ratio: Interval, floor: NoiseFloor | None) -> Interval:
    """The interval, each side at least the runner's noise between runs wide (in log units)."""
    if floor is None:
        return ratio
    low, high = ratio.mean * math.exp(-floor.half_width), ratio.mean * math.exp(floor.half_width)
    return Interval(ratio.mean, min(ratio.low, low), max(ratio.high, high))


def verdict(
    figure: Figure,
    base: Sequence[float],
    current: Sequence[float],
    limit: float,
    higher_is_better: bool,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
    floor: NoiseFloor | None = None,
) -> NoiseVerdict | None:
    """The verdict on the ratio of means; None when the baseline's mean is 0 (no ratio)."""
    bootstrap = ratio_interval(base, current, rng, resamples)
    if bootstrap is None:
        return None
    ratio = widened(bootstrap, floor)
    result = judge(ratio, limit, higher_is_better)
    spread = (ratio.high - ratio.low) / 2 / ratio.mean if ratio.mean > 0 and math.isfinite(ratio.high) else math.inf
    found = NoiseVerdict(figure, result, ratio, limit, (len(base), len(current)), spread, None, resamples, floor)
    return judged(found, bootstrap)


def judged(found: NoiseVerdict, bootstrap: Interval) -> NoiseVerdict:
    """An inconclusive verdict with what would decide it: runs of each build where the noise between runs sets
    its width, else repeats a side (from the repeats' own interval)."""
    if found.verdict != Verdict.INCONCLUSIVE:
        return found
    if found.between_runs and found.floor is not None:
        return replace(found, needed_runs=runs_for_power(found.floor, found.limit))
    return replace(found, needed=repeats_for_power(bootstrap, found.limit, min(found.repeats)))


def figure_values(point: LoadPointRecord, figure: Figure, quantity: str) -> list[float] | None:
    """Each repeat's texts/s (`throughput`) or p99 of `quantity`, or the point's own figure as one value
    when it was not repeated; None when a value lacks the figure (no successful request in it)."""
    runs = point.repeats if len(point.repeats) >= 2 else [point]
    found: list[float] = []
    for r in runs:
        value = r.throughput.texts_per_s if figure == Figure.THROUGHPUT else latency_p99(r.latency_ms, quantity)
        if value is None or not math.isfinite(value) or value < 0:
            return None
        found.append(float(value))
    return found


def point_verdicts(
    base: LoadPointRecord,
    current: LoadPointRecord,
    quantity: str,
    limits: dict[Figure, float | None],
    seed: int,
    label: str,
    floors: dict[Figure, NoiseFloor],
    resamples: int = RESAMPLES,
) -> list[NoiseVerdict] | None:
    """The verdicts of a point's gates (`limits`: the minimum throughput ratio, the maximum p99 ratio; those
    asked for) from the repeats on both sides, each interval at least its calibrated floor wide; a figure a side
    has no interval for (measured once, uncalibrated) is left out, to be gated one run against one run; None when
    no gated figure has one. A p99 of repeats too short for their own is judged on their answers pooled
    (bench.gate.pooled_p99). Seeded by the point's name, so a verdict does not depend on which other points were
    compared."""
    found: list[NoiseVerdict] = []
    for figure in Figure:
        limit = limits.get(figure)
        if limit is None:
            continue
        rng = seeded_generator(seed, label, figure)
        b, c = figure_values(base, figure, quantity), figure_values(current, figure, quantity)
        floor = floors.get(figure)
        if (b is None or c is None) and floor is None and figure == Figure.P99:
            result = _pooled_p99_verdict(base, current, quantity, limit, rng, resamples)
        elif b is None or c is None or (floor is None and min(len(b), len(c)) < 2):
            continue
        else:
            result = verdict(figure, b, c, limit, figure == Figure.THROUGHPUT, rng, resamples, floor)
        if result is not None:
            found.append(result)
    return found or None


def _pooled_p99_verdict(
    base: LoadPointRecord, current: LoadPointRecord, quantity: str, limit: float, rng: np.random.Generator, n: int
) -> NoiseVerdict | None:
    """The p99 verdict of two repeated points whose repeats are each too short for a p99 (None: not both
    repeated, or too few answers even pooled)."""
    from bench.gate import pooled_p99

    if min(len(base.repeats), len(current.repeats)) < 2:
        return None
    b, c = pooled_p99.answers(base, quantity), pooled_p99.answers(current, quantity)
    interval = pooled_p99.p99_ratio_interval(b, c, rng, n) if b is not None and c is not None else None
    if b is None or c is None or interval is None:
        return None
    spread = (interval.high - interval.low) / 2 / interval.mean if interval.mean > 0 else math.inf
    repeats, answers = (len(base.repeats), len(current.repeats)), (b.total, c.total)
    found = NoiseVerdict(Figure.P99, judge(interval, limit, False), interval, limit, repeats, spread, None, n)
    return judged(replace(found, answers=answers), interval)


def run_figure(point: LoadPointRecord, figure: Figure, quantity: str) -> float | None:
    """A calibration run's figure for a point: the mean over its repeats (what a gate compares)."""
    values = figure_values(point, figure, quantity)
    return float(np.mean(values)) if values else None
