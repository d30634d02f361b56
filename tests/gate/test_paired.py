"""Paired statistics of interleaved rounds (bench/gate/paired.py) on simulated jobs (seeded numpy): a 10% step
at ±3% paired noise is flagged, A/A jobs almost never fail, drift over the job cancels, and the stated smallest
step is the one seen at 80% power."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.core.resample import Interval
from bench.gate import paired
from bench.gate.noise import Verdict, judge
from bench.load.interleave_slices import slice_order
from bench.results.schema import InterleavedRound

ROUNDS = 10
LIMIT = 0.95  # --min-throughput-ratio


def simulated_job(
    rng: np.random.Generator, step: float, noise: float, drift: float = 0.0, rounds: int = ROUNDS
) -> tuple[list[float], list[float]]:
    """A's and B's texts/s per round: the runner's level moves by ±20% per round and drifts by `drift` over the
    job (shared by both sides: the machine), each window adds its own `noise` (log sd per side)."""
    machine = np.exp(rng.normal(0, 0.2, rounds)) * np.linspace(1, 1 - drift, rounds)
    a = 100 * machine * np.exp(rng.normal(0, noise / math.sqrt(2), rounds))
    b = 100 * step * machine * np.exp(rng.normal(0, noise / math.sqrt(2), rounds))
    return list(a), list(b)


def _verdicts(seed: int, step: float, jobs: int = 100, drift: float = 0.0) -> list[Verdict]:
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(jobs):
        a, b = simulated_job(rng, step, 0.03, drift)
        stats = paired.paired_stats(a, b, higher_is_better=True)
        assert stats is not None
        found.append(paired.verdict(stats, LIMIT, higher_is_better=True))
    return found


def test_a_ten_percent_step_at_three_percent_paired_noise_is_flagged() -> None:
    verdicts = _verdicts(1, 0.90)
    assert verdicts.count(Verdict.FAIL) >= 95


def test_aa_jobs_fail_at_most_once_in_a_hundred() -> None:
    verdicts = _verdicts(2, 1.0)
    assert verdicts.count(Verdict.FAIL) <= 1
    assert verdicts.count(Verdict.PASS) >= 95  # and they are not merely inconclusive


def test_drift_of_both_sides_cancels_in_the_pairs() -> None:
    """Both sides slow by 30% over the job: the paired ratio is still the step; the unpaired noise is not."""
    rng = np.random.default_rng(3)
    a, b = simulated_job(rng, 0.90, 0.03, drift=0.3)
    stats = paired.paired_stats(a, b, higher_is_better=True)
    assert stats is not None
    assert stats.ratio.low < 0.90 < stats.ratio.high
    assert stats.unpaired_noise > 3 * stats.paired_noise
    assert _verdicts(4, 0.90, drift=0.3).count(Verdict.FAIL) >= 95
    assert _verdicts(5, 1.0, drift=0.3).count(Verdict.FAIL) <= 1


def test_the_stated_smallest_step_is_seen_at_eighty_percent_power() -> None:
    """Simulate jobs at exactly the smallest step the formula states for their noise: ~80% are detected by a
    one-sided test at FALSE_ALARM (interval's upper end below 1), within simulation error."""
    rng = np.random.default_rng(6)
    noise, rounds, jobs = 0.03, ROUNDS, 2000
    step = math.exp(-paired.smallest_step(noise, rounds, paired=True))
    detected = 0
    for _ in range(jobs):
        diffs = rng.normal(math.log(step), noise, rounds)
        a = np.ones(rounds)
        stats = paired.paired_stats(list(a), list(np.exp(diffs)), higher_is_better=True)
        assert stats is not None
        detected += stats.ratio.high < 1  # 95% two-sided: one-sided 2.5%, the stated false-alarm rate
    assert detected / jobs == pytest.approx(paired.POWER, abs=0.04)


def test_rounds_needed_is_the_first_count_that_sees_the_step() -> None:
    n = paired.rounds_needed(0.05, 0.95)
    assert n is not None and n > paired.MIN_ROUNDS
    assert paired.smallest_step(0.05, n, True) <= -math.log(0.95) < paired.smallest_step(0.05, n - 1, True)
    assert paired.rounds_needed(0.001, 0.95) == paired.MIN_ROUNDS  # never fewer than a 95% interval needs
    assert paired.rounds_needed(0.03, 1.0) is None  # no step to see
    assert paired.rounds_needed(5.0, 0.999) is None  # past MAX_ROUNDS
    unpaired = paired.rounds_needed(0.05, 0.95, paired=False)
    assert unpaired is not None and unpaired != n  # more degrees of freedom: a different count


def test_latency_regressions_are_above_one_and_judged_lower_is_better() -> None:
    a = [10.0, 12.0, 11.0, 10.5, 9.5, 10.2, 11.4]
    b = [x * 1.5 * w for x, w in zip(a, [1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0], strict=True)]
    stats = paired.paired_stats(a, b, higher_is_better=False)
    assert stats is not None
    assert stats.detectable > 1 and stats.ratio.mean == pytest.approx(1.5, rel=0.01)
    assert paired.verdict(stats, 1.2, higher_is_better=False) == Verdict.FAIL
    assert paired.verdict(stats, 2.0, higher_is_better=False) == Verdict.PASS


def test_rounds_without_a_figure_are_left_out() -> None:
    assert paired.paired_stats([1.0, math.nan], [1.0, 2.0], True) is None
    stats = paired.paired_stats([1.0, math.nan, 2.0, 3.0, 0.0], [1.1, 5.0, 2.2, 3.3, 0.0], True)
    assert stats is not None and stats.rounds == 3  # a side not measured, or neither answering: left out


def test_overall_verdict() -> None:
    assert paired.overall([]) is None
    assert paired.overall([Verdict.PASS, Verdict.INCONCLUSIVE]) == Verdict.INCONCLUSIVE
    assert paired.overall([Verdict.INCONCLUSIVE, Verdict.FAIL]) == Verdict.FAIL
    assert paired.overall([Verdict.PASS, Verdict.PASS]) == Verdict.PASS


def _gate_fail_rate(rng: np.random.Generator, noise: float, step: float, rounds: int, jobs: int = 2000) -> float:
    fails = 0
    for _ in range(jobs):
        diffs = rng.normal(math.log(step), noise, rounds)
        stats = paired.paired_stats([1.0] * rounds, list(np.exp(diffs)), higher_is_better=True)
        assert stats is not None
        fails += paired.verdict(stats, LIMIT, higher_is_better=True) == Verdict.FAIL
    return fails / jobs


def test_rounds_to_flag_a_step_past_the_limit_give_the_gate_eighty_percent_power() -> None:
    """At the count stated the gate itself (interval wholly past the limit) fails ×0.90 at a 0.95 limit ~80% of
    the time or more; one round fewer, less."""
    noise = 0.06
    n = paired.rounds_to_flag(noise, 0.90, LIMIT)
    assert n is not None and n > 2
    rng = np.random.default_rng(7)
    assert _gate_fail_rate(rng, noise, 0.90, n) >= paired.POWER - 0.03
    assert _gate_fail_rate(rng, noise, 0.90, n - 1) < _gate_fail_rate(rng, noise, 0.90, n)
    assert paired.rounds_to_flag(noise, 0.90, None) == paired.rounds_needed(noise, 0.90)  # no limit: against ×1
    assert paired.rounds_to_flag(noise, 0.97, LIMIT) is None  # on the passing side of the limit


def test_the_verdict_lines_say_the_rounds_a_step_needs() -> None:
    rng = np.random.default_rng(8)
    a, b = simulated_job(rng, 0.90, 0.03)
    figure = paired.paired_figure("texts_per_s", list(a), list(b), LIMIT)
    assert figure is not None
    line = paired.detect_line(figure)
    n = paired.rounds_to_flag(figure.paired_noise, 0.9, LIMIT)
    assert line is not None and "past the limit ×0.95" in line and f"×0.9: {n} " in line and "×0.95:" not in line
    ungated = paired.paired_figure("texts_per_s", list(a), list(b), None)
    assert ungated is not None and "×0.95: " in (paired.detect_line(ungated) or "")


def test_signed_rank_critical_values_match_the_textbook_table() -> None:
    """Two-sided 5% critical values of the signed-rank statistic (e.g. Hollander & Wolfe; n = 12: 13), exact up
    to 50 rounds, the normal approximation beyond (n = 51: 453 in the tables)."""
    table = {6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 11: 10, 12: 13, 15: 25, 20: 52, 25: 89, 30: 137, 40: 264, 50: 434}
    assert {n: paired.signed_rank_critical(n) for n in table} == table
    assert paired.signed_rank_critical(51) == 453


def test_the_interval_is_the_fourteenth_smallest_and_largest_walsh_average_at_twelve_rounds() -> None:
    rng = np.random.default_rng(9)
    diffs = rng.normal(-0.1, 0.03, 12)
    walsh = sorted((diffs[i] + diffs[j]) / 2 for i in range(12) for j in range(i, 12))
    assert len(walsh) == 78
    low, estimate, high = paired.log_interval(diffs)
    assert (low, high) == pytest.approx((walsh[13], walsh[78 - 14]), abs=1e-12)
    assert estimate == pytest.approx((walsh[38] + walsh[39]) / 2, abs=1e-12)  # the median of 78


def test_fewer_than_six_rounds_fall_back_to_the_t_interval() -> None:
    """No signed-rank interval reaches 95% below 6 rounds (2^-5 > 2.5%): the mean and Student t instead."""
    diffs = np.log([0.9, 0.92, 0.88, 0.91, 0.9])
    low, mean, high = paired.log_interval(diffs)
    half = 2.7764451051977987 * float(diffs.std(ddof=1)) / math.sqrt(5)  # t(0.975, 4)
    assert (low, mean, high) == pytest.approx((diffs.mean() - half, diffs.mean(), diffs.mean() + half), abs=1e-9)


STEADY = [0.91, 0.90, 0.92, 0.91, 0.93, 0.90, 0.91, 0.92, 0.89, 0.91, 0.90]  # 11 rounds of a 9% slower B


@pytest.mark.parametrize("wild", [0.39, 3.1])  # B's or A's client descheduled for one round (issue 36's jobs)
def test_one_wild_round_among_steady_ones_still_fails(wild: float) -> None:
    """A's texts/s 50 each round, B's at the ratios: one collapsed round. The t interval on the logs (the old
    statistics) is widened by it past any verdict; the signed-rank interval moves by one rank and still fails."""
    ratios = [*STEADY, wild]
    stats = paired.paired_stats([50.0] * 12, [50.0 * r for r in ratios], higher_is_better=True)
    assert stats is not None
    assert paired.verdict(stats, LIMIT, higher_is_better=True) == Verdict.FAIL
    assert 0.89 < stats.ratio.low < stats.ratio.mean < stats.ratio.high < 0.93
    assert math.expm1(stats.paired_noise) < 0.02  # the robust noise is the steady rounds'
    logs = np.log(ratios)
    half = 2.200985160082949 * float(logs.std(ddof=1)) / math.sqrt(12)  # t(0.975, 11): the old interval
    old = Interval(math.exp(logs.mean()), math.exp(logs.mean() - half), math.exp(logs.mean() + half))
    assert judge(old, LIMIT, higher_is_better=True) == Verdict.INCONCLUSIVE


def _sliced_rounds(stalls: dict[int, tuple[str, int]], sliced: bool = True) -> list[InterleavedRound]:
    """12 rounds of 2 slices a side, B ~9% slower in every slice; `stalls`: round -> (side, slice) whose texts/s
    fell to 0.4 (a client stall of a few hundred ms). Without `sliced` the same windows as an old record holds."""
    rounds = []
    for i in range(12):
        a, b = [50.0, 50.0], [50.0 * STEADY[i % 11], 50.0 * STEADY[(i + 5) % 11]]
        if i in stalls:
            side, k = stalls[i]
            (a if side == "a" else b)[k] *= 0.4
        wa, wb = sum(a) / 2, sum(b) / 2
        rounds.append(
            InterleavedRound(
                i + 1, "ab"[i % 2], wa, wb, None, None, None, None, wb / wa, None, None,
                a if sliced else None, b if sliced else None,
            )
        )  # fmt: skip
    return rounds


def test_a_stall_in_one_slice_spoils_one_slice_pair_not_its_round() -> None:
    """Four rounds of 12 with a stalled slice (two on each side): paired by round, four wild ratios of 12 leave
    the interval past any verdict; paired by slice, they are four of 24 and the 9% step still fails, inside the
    steady slices' spread. Noise and smallest step are per pair; the rounds a step needs count two pairs a round."""
    stalls = {1: ("a", 0), 4: ("b", 1), 7: ("a", 1), 10: ("b", 0)}
    (by_slice,), verdict = paired.judged_figures(_sliced_rounds(stalls), {"texts_per_s": LIMIT})
    assert verdict == Verdict.FAIL and (by_slice.rounds, by_slice.pairs) == (12, 24)
    assert 0.89 < by_slice.ratio.low < by_slice.ratio.high < 0.93
    assert "over 24 slice pairs of 12 rounds" in paired.figure_line(by_slice)
    needed = paired.rounds_needed(by_slice.paired_noise, LIMIT)
    assert needed is not None and by_slice.rounds_needed == math.ceil(needed / 2)
    (by_round,), verdict = paired.judged_figures(_sliced_rounds(stalls, sliced=False), {"texts_per_s": LIMIT})
    assert verdict == Verdict.INCONCLUSIVE and by_round.pairs is None and by_round.rounds == 12
    assert "over 12 rounds;" in paired.figure_line(by_round)


def test_slice_pairs_at_the_limit_fail_at_most_the_false_alarm_rate_under_drift_within_rounds() -> None:
    """2,000 jobs of 12 rounds x 2 slice pairs whose true ratio is the limit, the machine drifting by 4% from slice
    to slice within each round (both sides), the side that goes first drawn per round: X Y | Y X pairs each see
    the drift once forwards and once backwards, so the pairs' log ratios stay symmetric and the gate fails at most
    2.5% of them (+3 sd of 2,000 draws). An order with the same side first in both pairs of a round (X Y X Y)
    fails ~7% here: its two pairs lean the same way."""
    rng = np.random.default_rng(11)
    failed = 0
    jobs = 2000
    for _ in range(jobs):
        rounds = []
        for i in range(12):
            level = 100 * math.exp(rng.normal(0, 0.2)) * np.cumprod([1.0, 0.96, 0.96, 0.96])  # 4 slices in order
            first = int(rng.integers(2))
            sides: list[list[float]] = [[], []]
            for k, side in enumerate(slice_order(first, 2)):  # as load --slice runs them: X Y Y X
                sides[side].append(level[k] * (LIMIT if side == 1 else 1.0) * math.exp(rng.normal(0, 0.015)))
            a, b = sides
            rounds.append(InterleavedRound(i + 1, "ab"[first], 1, 1, None, None, None, None, None, None, None, a, b))
        _, verdict = paired.judged_figures(rounds, {"texts_per_s": LIMIT})
        failed += verdict == Verdict.FAIL
    assert failed / jobs <= paired.FALSE_ALARM + 3 * math.sqrt(paired.FALSE_ALARM * (1 - paired.FALSE_ALARM) / jobs)


def test_a_side_that_stops_answering_fails_instead_of_leaving_its_answered_rounds() -> None:
    """B answers at A's rate, then nothing (0 texts/s): its zeros are measured ratios of ~0, not missing rounds.
    Silent from round 5 of 12, the gate fails; from round 7, half the rounds, it cannot pass (inconclusive);
    the answered rounds alone would pass. Rounds where neither side answered are left out."""
    a = [50.0] * 12
    answered = [50.0 * r for r in (1.0, 0.99, 1.01, 1.0, 0.995, 1.005)]
    for silent_from, expected in ((4, Verdict.FAIL), (6, Verdict.INCONCLUSIVE)):
        b = answered[:silent_from] + [0.0] * (12 - silent_from)
        stats = paired.paired_stats(a, b, higher_is_better=True)
        assert stats is not None and stats.pairs == 12
        assert paired.verdict(stats, 0.97, higher_is_better=True) == expected
    alone = paired.paired_stats(a[:6], answered, higher_is_better=True)
    assert alone is not None and paired.verdict(alone, 0.97, higher_is_better=True) == Verdict.PASS
    both_silent = paired.paired_stats([*a[:6], 0.0], [*answered, 0.0], higher_is_better=True)
    assert both_silent is not None and both_silent.pairs == 6
