"""Paired A/B statistics of interleaved rounds (`load --interleave`): each round measures the baseline A and the
candidate B back to back, so whatever moves the whole machine between rounds (drift) moves both and cancels in
the round's ratio B ÷ A.

- the pairs: each round is one pair (A's window, B's window); a run in slices (`--slice`) pairs texts/s finer, each
  round's k-th slice of A with B's k-th, measured back to back (X Y | Y X): a stall of a few hundred ms on one side
  spoils one pair of 2 × rounds instead of one round of the rounds, and drift within a round cancels too. p50 and
  p99 stay paired by round (a quantile needs the whole window's answers). Slices of one round are not further
  apart than the round itself, and which side goes first alternates from pair to pair, so the pairs are as
  exchangeable as rounds: under no change each log ratio is still symmetric about 0 (measured: A/A and ratios at
  the limit, docs/ci.md);
- the ratio: exp of the Hodges-Lehmann estimate of the rounds' log ratios (the median of their Walsh averages,
  (d_i + d_j) / 2 for i <= j), with the exact Wilcoxon signed-rank 95% interval: the (c + 1)-th smallest and
  largest Walsh averages, c the largest count with P(T <= c) <= 2.5% under no change (the exact null
  distribution up to 50 rounds, normal beyond). Distribution-free and robust: one round where the client was
  descheduled (a ratio of 0.4 among rounds at 0.91) moves it by one rank, where it widened the t interval past
  any verdict (issue 36). The log makes a ratio's noise symmetric. Below 6 rounds no signed-rank interval
  reaches 95%, so the mean and the Student t interval of the logs then (n - 1 degrees of freedom);
- the verdict: the gate's own rule (bench.gate.noise.judge) on that interval against `compare`'s limit: fail
  when the whole interval is past it, pass when it is all clear of it, inconclusive when it straddles it. A
  figure exactly at the limit fails with probability at most FALSE_ALARM = 2.5% (one side of the interval;
  the exact test's tail is at or below it);
- the paired noise: a robust sd of log(B/A) over the rounds, 1.4826 × their median absolute deviation (the sd
  of normal noise, unmoved by a wild round); the unpaired noise of the same windows: sqrt(s(log A)^2 +
  s(log B)^2) with the same scale s, what comparing A's windows alone with B's alone would see (drift included);
- the smallest step each can see: the change of the ratio detected with POWER = 80% at the one-sided false
  alarm rate FALSE_ALARM, for this many rounds: exp(±(t(1 - FALSE_ALARM, df) + t(POWER, df)) × noise /
  sqrt(0.955 n)), the t test's with its rounds scaled by the signed-rank test's efficiency under normal noise
  (3/pi ~ 0.955; df = n - 1 paired, 2n - 2 unpaired). The gate, which needs its interval past its limit,
  fails a ratio with 80% power once it is that step past the limit; `rounds_needed` says how many rounds
  (at least 6) would see the limit's own step (×0.95 for a limit of 0.95).

    >>> s = paired_stats([100.0, 90.0, 110.0, 95.0], [90.0, 81.0, 99.0, 85.5], higher_is_better=True)
    >>> round(s.ratio.mean, 3), s.rounds, s.paired_noise < s.unpaired_noise
    (0.9, 4, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from bench.core.resample import CONFIDENCE, Interval
from bench.gate import anytime
from bench.gate.config import GateConfig
from bench.gate.noise import Verdict, judge
from bench.results.schema import InterleavedRecord, InterleavedRound, PairedFigure
from bench.results.schema.load import InterleavedVerdict, PairedFigureName

FALSE_ALARM = (1 - CONFIDENCE) / 2  # one-sided: a fail needs the whole 95% interval past the limit
POWER = 0.8
MAX_ROUNDS = 1000  # rounds_needed gives up past this (None: not worth a job)
FIGURES = tuple(PairedFigureName)  # texts/s, p50 (reported, not gated, as in compare), p99
DETECT_STEPS = (0.95, 0.9)  # the slower B's texts/s ratios `detect_line` gives rounds for
MIN_ROUNDS = 6  # the fewest rounds whose signed-rank interval reaches 95% (P(T = 0) = 2^-6 < 2.5%)
EXACT_ROUNDS = 50  # the signed-rank null distribution is exact up to this many rounds, normal beyond
MAD_TO_SD = 1.4826  # 1 / Phi^-1(0.75): the median absolute deviation of normal noise is 0.6745 sd
ZERO_FLOOR = 1e-6  # a side's 0 (no answer in its window) as a millionth of the pairs' largest value
WILCOXON_EFFICIENCY = 3 / math.pi  # ~0.955: the signed-rank test's efficiency against t under normal noise


@dataclass(frozen=True)
class PairedStats:
    """One figure's paired ratio over the rounds and what its noise lets a gate see."""

    ratio: Interval  # B ÷ A: exp(Hodges-Lehmann estimate of the log ratio), exact 95% Wilcoxon interval
    rounds: int  # rounds with the figure on both sides
    pairs: int  # the pairs judged: the rounds, or their slice pairs
    paired_noise: float  # 1.4826 × MAD of log(B/A) over the pairs (log units; a robust sd)
    unpaired_noise: float  # sqrt(s(log A)² + s(log B)²), s = 1.4826 × MAD: the same windows, unpaired
    detectable: float  # the smallest regression ratio seen at POWER (below 1 for throughput, above 1 for latency)
    detectable_unpaired: float  # the same from the unpaired noise

    def rounds_needed(self, limit: float, paired: bool = True) -> int | None:
        """Rounds for a step as large as `limit`'s (e.g. ×0.95) to be seen at POWER; None past MAX_ROUNDS or
        at a limit of 1 (no step)."""
        noise = self.paired_noise if paired else self.unpaired_noise
        return in_rounds(rounds_needed(noise, limit, paired), self.pairs / self.rounds)


def paired_stats(
    a: Sequence[float],
    b: Sequence[float],
    higher_is_better: bool,
    rounds: int | None = None,
    groups: Sequence[int] | None = None,
) -> PairedStats | None:
    """The stats of pairs (a[i], b[i]) measured in `rounds` rounds (None: one pair a round). A side at 0 beside
    a positive other (a window in which it answered nothing) is measured, not missing: its value is floored at
    ZERO_FLOOR × the largest of the pairs, a ratio of ~0 (or ~inf) that ranks past every other, so a side that
    stops answering fails the gate instead of leaving the rounds it still answered. Pairs with a side not
    finite or below 0, or both at 0 (nothing measured), are left out. None with fewer than two usable pairs (no
    spread to estimate). `groups` (each pair's round): the interval is the anytime-valid one over the rounds in
    that order (bench/gate/anytime.py: `--max-time`, looked at after every round), not the fixed-count one."""
    group = list(groups) if groups is not None else list(range(len(a)))
    kept = [
        (x, y, g)
        for x, y, g in zip(a, b, group, strict=True)
        if math.isfinite(x) and math.isfinite(y) and x >= 0 and y >= 0 and (x > 0 or y > 0)
    ]
    pairs = [(x, y) for x, y, _ in kept]
    n = len(pairs)
    if n < 2:
        return None
    floor = ZERO_FLOOR * max(max(pair) for pair in pairs)
    log_a, log_b = np.log([max(x, floor) for x, _ in pairs]), np.log([max(y, floor) for _, y in pairs])
    diffs = log_b - log_a
    paired = robust_scale(diffs)
    unpaired = math.sqrt(robust_scale(log_a) ** 2 + robust_scale(log_b) ** 2)
    low, centre, high = log_interval(diffs)
    if groups is not None:
        low, high = anytime.anytime_interval(by_round(diffs, [g for _, _, g in kept]))
        low, high = (centre, centre) if math.isnan(low) else (min(low, centre), max(high, centre))
    sign = -1.0 if higher_is_better else 1.0
    return PairedStats(
        ratio=Interval(math.exp(centre), math.exp(low), math.exp(high)),
        rounds=min(rounds, n) if rounds is not None else n,
        pairs=n,
        paired_noise=paired,
        unpaired_noise=unpaired,
        detectable=math.exp(sign * smallest_step(paired, n, True)),
        detectable_unpaired=math.exp(sign * smallest_step(unpaired, n, False)),
    )


def by_round(diffs: np.ndarray, groups: Sequence[int]) -> list[list[float]]:
    """The pairs' log ratios as a list per round, rounds in the order of their numbers."""
    found: dict[int, list[float]] = {}
    for d, g in zip(diffs, groups, strict=True):
        found.setdefault(g, []).append(float(d))
    return [found[g] for g in sorted(found)]


def robust_scale(values: np.ndarray) -> float:
    """1.4826 × the median absolute deviation: the sd of normal noise, not moved by one wild round."""
    return MAD_TO_SD * float(np.median(np.abs(values - np.median(values))))


def log_interval(diffs: np.ndarray) -> tuple[float, float, float]:
    """(low, estimate, high) of the log ratio: the Hodges-Lehmann estimate (median of the Walsh averages) and the
    exact Wilcoxon signed-rank 95% interval, the (c + 1)-th smallest and largest Walsh averages, c the critical
    value. Below MIN_ROUNDS no such interval reaches 95% (the smallest tail, 2^-n, is past 2.5%): the mean and
    the Student t interval then."""
    n = len(diffs)
    if n < MIN_ROUNDS:
        mean, half = float(diffs.mean()), _t(0.5 + CONFIDENCE / 2, n - 1) * float(diffs.std(ddof=1)) / math.sqrt(n)
        return mean - half, mean, mean + half
    i, j = np.triu_indices(n)
    walsh = np.sort((diffs[i] + diffs[j]) / 2)
    c = signed_rank_critical(n)
    return float(walsh[c]), float(np.median(walsh)), float(walsh[len(walsh) - 1 - c])


@cache
def signed_rank_critical(n: int) -> int:
    """The largest c with P(T <= c) <= FALSE_ALARM for the signed-rank statistic T of n rounds under no change:
    exact (the count of subsets of ranks 1..n by their sum, a small DP) up to EXACT_ROUNDS, normal beyond."""
    if n > EXACT_ROUNDS:
        mean, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(math.floor(mean - _z(1 - FALSE_ALARM) * sd - 0.5), 0)  # continuity-corrected
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):  # float64 holds these counts exactly: at most 2^50 < 2^53
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    tail = np.cumsum(counts) / 2.0**n
    return int(np.searchsorted(tail, FALSE_ALARM, side="right")) - 1


def smallest_step(noise: float, rounds: int, paired: bool) -> float:
    """The smallest |log ratio| seen at POWER and FALSE_ALARM with `rounds` rounds of `noise` (log units): the
    t test's, with the rounds scaled by WILCOXON_EFFICIENCY (its rounds are worth ~0.955 of the t test's)."""
    df = rounds - 1 if paired else 2 * rounds - 2
    return (_t(1 - FALSE_ALARM, df) + _t(POWER, df)) * noise / math.sqrt(WILCOXON_EFFICIENCY * rounds)


def rounds_needed(noise: float, step: float, paired: bool = True) -> int | None:
    """The fewest rounds (≥ MIN_ROUNDS) whose smallest step is within |log step|; None past MAX_ROUNDS or for
    no step."""
    wanted = abs(math.log(step)) if step > 0 else 0.0
    if wanted == 0:
        return None
    for n in range(MIN_ROUNDS, MAX_ROUNDS + 1):
        if smallest_step(noise, n, paired) <= wanted:
            return n
    return None


def in_rounds(pairs: int | None, per_round: float) -> int | None:
    """Pairs needed, as rounds of `per_round` pairs each (a run in slices: 2 or more a round)."""
    return math.ceil(pairs / per_round - 1e-9) if pairs is not None else None


def rounds_to_flag(noise: float, step: float, limit: float | None) -> int | None:
    """The fewest rounds after which the gate at `limit` fails a true ratio of `step` with POWER: it fails once
    the whole interval is past the limit, so the distance to see is step ÷ limit (no limit: step ÷ 1, a one-sided
    test at FALSE_ALARM). None when the step is not past the limit, or past MAX_ROUNDS."""
    distance = step / (limit if limit is not None else 1.0)
    if limit is not None and (limit - step) * (1 - step) <= 0:  # the step is on the passing side of the limit
        return None
    return rounds_needed(noise, distance)


def detect_line(f: PairedFigure) -> str | None:
    """texts/s only: the rounds this run's paired noise needs to flag a 5% and a 10% slower B (by its limit, or
    against ×1 when none is given), beside the unpaired noise's count; None for other figures."""
    if f.figure != PairedFigureName.TEXTS_PER_S or f.silent_rounds:  # B stopped answering: no noise to count by
        return None
    against = f"the limit ×{f.limit:g}" if f.limit is not None else "×1 (no limit given)"
    per_round = (f.pairs or f.rounds) / f.rounds
    counts = [
        f"×{step:g}: {_rounds(in_rounds(rounds_to_flag(f.paired_noise, step, f.limit), per_round))} "
        f"(unpaired {_rounds(in_rounds(rounds_to_flag(f.unpaired_noise, step, f.limit), per_round))})"
        for step in DETECT_STEPS
        if f.limit is None or step < f.limit
    ]
    if not counts:
        return None
    return (
        f"rounds to flag a slower B past {against} at 80% power at this paired noise "
        f"(±{math.expm1(f.paired_noise):.1%}): " + "; ".join(counts)
    )


def verdict(stats: PairedStats, limit: float, higher_is_better: bool) -> Verdict:
    """`compare`'s rule on the paired interval (bench.gate.noise.judge)."""
    return judge(stats.ratio, limit, higher_is_better)


def overall(verdicts: Sequence[Verdict]) -> Verdict | None:
    """The job's verdict from its gated figures: any fail fails, then any inconclusive; None: nothing gated."""
    if not verdicts:
        return None
    for worst in (Verdict.FAIL, Verdict.INCONCLUSIVE):
        if worst in verdicts:
            return worst
    return Verdict.PASS


def limits_of(config: GateConfig) -> dict[str, float | None]:
    """compare's limits as ratios B ÷ A: --min-throughput-ratio on texts/s, 1 + --max-p99-increase on p99."""
    p99 = config.max_p99_increase
    return {"texts_per_s": config.min_throughput_ratio, "p50": None, "p99": 1 + p99.value if p99 is not None else None}


def judged_figures(
    rounds: Sequence[InterleavedRound], limits: dict[str, float | None], anytime: bool = False
) -> tuple[list[PairedFigure], Verdict | None]:
    """Each figure's paired stats over the rounds (texts/s: their slice pairs where they have them), judged by
    its limit, and the job's verdict (None: nothing gated). A figure with fewer than two pairs on both sides (a
    p99 of too few answers) is left out, and so is a round the machine was too busy for (`too_busy`: its
    windows are the machine's, not the endpoints'). `anytime`: the intervals are the anytime-valid ones (a run
    that looked after every round, `--max-time`)."""
    rounds = [r for r in rounds if r.too_busy is None]
    sides: dict[str, list[tuple[float | None, float | None, int]]] = {
        "texts_per_s": [(*pair, r.round) for r in rounds for pair in texts_pairs(r)],
        "p50": [(r.baseline_p50_ms, r.current_p50_ms, r.round) for r in rounds],
        "p99": [(r.baseline_p99_ms, r.current_p99_ms, r.round) for r in rounds],
    }
    used = {  # the rounds with a pair measured (paired_stats keeps a pair with one side at 0)
        "texts_per_s": sum(any(_measured(a, b) for a, b in texts_pairs(r)) for r in rounds),
        "p50": sum(_measured(r.baseline_p50_ms, r.current_p50_ms) for r in rounds),
        "p99": sum(_measured(r.baseline_p99_ms, r.current_p99_ms) for r in rounds),
    }
    figures = []
    for name in FIGURES:
        a, b = [x for x, _, _ in sides[name]], [y for _, y, _ in sides[name]]
        groups = [g for _, _, g in sides[name]] if anytime else None
        found = paired_figure(name, a, b, limits.get(name), used[name], groups)
        if found is not None:
            figures.append(found)
    return figures, overall([Verdict(f.verdict) for f in figures if f.verdict is not None])


def _measured(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and bool(a or b)


def texts_pairs(r: InterleavedRound) -> list[tuple[float | None, float | None]]:
    """A round's texts/s pairs: its slices' (k-th of A, k-th of B), back to back, where it was cut in slices; else
    its two windows."""
    a, b = r.baseline_slices_texts_per_s, r.current_slices_texts_per_s
    if a is not None and b is not None and len(a) == len(b):
        return list(zip(a, b, strict=True))
    return [(r.baseline_texts_per_s, r.current_texts_per_s)]


def not_judged(figures: Sequence[PairedFigure], limits: dict[str, float | None]) -> list[str]:
    """The gated figures left out of `figures` (too few rounds with them on both sides)."""
    judged = {f.figure for f in figures}
    return [name for name in FIGURES if limits.get(name) is not None and name not in judged]


def paired_figure(
    name: str,
    a: list[float | None],
    b: list[float | None],
    limit: float | None,
    rounds: int | None = None,
    groups: list[int] | None = None,
) -> PairedFigure | None:
    """One figure over the pairs where both sides have it, measured in `rounds` rounds (None: a pair each); None
    with fewer than two such pairs. `groups`, each pair's round: the anytime-valid interval (paired_stats)."""
    group = groups if groups is not None else list(range(len(a)))
    both = [(x, y, g) for x, y, g in zip(a, b, group, strict=True) if x is not None and y is not None]
    higher = name == PairedFigureName.TEXTS_PER_S
    kept = [g for _, _, g in both] if groups is not None else None
    stats = paired_stats([x for x, _, _ in both], [y for _, y, _ in both], higher, rounds, kept)
    if stats is None:
        return None
    return PairedFigure(
        figure=PairedFigureName(name),
        ratio=stats.ratio,
        rounds=stats.rounds,
        pairs=stats.pairs if stats.pairs != stats.rounds else None,
        paired_noise=stats.paired_noise,
        unpaired_noise=stats.unpaired_noise,
        detectable=stats.detectable,
        detectable_unpaired=stats.detectable_unpaired,
        limit=limit,
        verdict=InterleavedVerdict(verdict(stats, limit, higher)) if limit is not None else None,
        rounds_needed=stats.rounds_needed(limit) if limit is not None else None,
        rounds_needed_unpaired=stats.rounds_needed(limit, paired=False) if limit is not None else None,
    )


FIGURE_NAMES = {"texts_per_s": "texts/s", "p50": "p50", "p99": "p99"}


def describe(record: InterleavedRecord) -> list[str]:
    """The verdict first, then one line per figure: its paired interval, the limit, the noise paired and
    unpaired, and the smallest step each sees."""
    head = (
        f"INTERLEAVED {record.current} ÷ {record.baseline}, {record.point}, {len(record.rounds)} rounds: "
        f"{anytime.verdict_text(record)}"
    )
    missing = [
        f"  {FIGURE_NAMES[name]} not judged: fewer than 2 rounds have it on both sides (a p99 needs 100 answers "
        "per window: give a longer --window)"
        for name in record.not_judged
    ]
    detect = [f"  {line}" for line in map(detect_line, record.figures) if line is not None]
    return [head, *(f"  {figure_line(f)}" for f in record.figures), *detect, *missing, *anytime.budget_lines(record)]


def figure_line(f: PairedFigure) -> str:
    """`texts/s ×0.903 [0.889, 0.917]; limit ×0.95: fail; paired noise ±1.2% (unpaired ±8.5%); ...`."""
    r = f.ratio
    over = f"{f.pairs} slice pairs of {f.rounds} rounds" if f.pairs else f"{f.rounds} rounds"
    name = FIGURE_NAMES.get(f.figure, f.figure)
    if f.silent_rounds:  # a ratio of 0 in a log: no interval or noise of the logs means anything (issue 50)
        rounds = ", ".join(map(str, f.silent_rounds))
        said = f"{name}: B answered nothing in round(s) {rounds} of {f.rounds} (A answered): it stopped answering"
        return said + (f"; limit ×{f.limit:g}: {f.verdict}" if f.limit is not None else "")
    said = f"{name} ×{r.mean:.3f} [{r.low:.3f}, {r.high:.3f}] over {over}"
    if f.at_least_rounds:
        said += (
            f" (at least: B answered too few times for a p99 in round(s) {', '.join(map(str, f.at_least_rounds))}, "
            "its largest answer taken)"
        )
    if f.limit is not None:
        said += f"; limit ×{f.limit:g}: {f.verdict}"
    said += (
        f"; paired noise ±{math.expm1(f.paired_noise):.1%} (unpaired ±{math.expm1(f.unpaired_noise):.1%}); "
        f"smallest step seen at 80% power ×{f.detectable:.3f} (unpaired ×{f.detectable_unpaired:.3f})"
    )
    if f.limit is not None and f.limit != 1:
        said += (
            f"; rounds to see ×{f.limit:g}: {_rounds(f.rounds_needed)} (unpaired {_rounds(f.rounds_needed_unpaired)})"
        )
    return said


def _rounds(n: int | None) -> str:
    return str(n) if n is not None else f"more than {MAX_ROUNDS}"


def _z(q: float) -> float:
    from scipy import special

    return float(special.ndtri(q))


@cache
def _t(q: float, df: int) -> float:
    # scipy.special's inverse of Student's t, not scipy.stats.t.ppf (the same function underneath): importing
    # scipy.stats took ~2-3 s of a job on the busy runner, scipy.special ~1 s; imported here, where it is needed
    from scipy import special

    return float(special.stdtrit(df, q))
