"""The one verdict of interleaved rounds (bench/gate/interleaved.py `judge_rounds`): a B that stopped answering, a B
too slow to answer 100 times for a p99, and the lines that say them (issue 50)."""

from __future__ import annotations

from dataclasses import replace

from bench.commands.interleave import round_figures
from bench.gate import paired
from bench.gate.interleaved import judge_rounds
from bench.results.schema import InterleavedRound
from bench.results.schema.load import InterleavedVerdict
from tests.gate.helpers import load_point

THROUGHPUT = {"texts_per_s": 0.95, "p50": None, "p99": None}
P99 = {"texts_per_s": None, "p50": None, "p99": 1.1}  # --max-p99-increase 10%


def _round(i: int, a: float, b: float, a_p99: float | None = 20.0, b_p99: float | None = 20.0, **extra):
    ratio = b / a if a else None
    p99_ratio = b_p99 / a_p99 if a_p99 and b_p99 is not None else None
    return InterleavedRound(i, "a", a, b, 10.0, 10.0, a_p99, b_p99, ratio, 1.0, p99_ratio, **extra)


def test_a_b_that_stopped_answering_fails_and_is_said_with_no_interval_of_a_ratio_of_zero():
    """B answered in round 1 and nothing in round 2: the t interval of the logs was [0.000, 4.35e36] and the noise
    ±4,089,042.8%; now FAIL, B stopped answering, no interval or noise."""
    rounds = [_round(1, 1000.0, 900.0), _round(2, 1000.0, 0.0, b_p99=None)]
    judged = judge_rounds(rounds, THROUGHPUT, sequential=False)
    assert judged.verdict == InterleavedVerdict.FAIL
    assert judged.why == "B answered nothing in round 2 of 2 (A answered in each): it stopped answering"
    (texts,) = [f for f in judged.figures if f.figure == "texts_per_s"]
    line = paired.figure_line(texts)
    assert "B answered nothing in round(s) 2 of 2 (A answered): it stopped answering" in line, line
    assert "[" not in line and "±" not in line and paired.detect_line(texts) is None
    p99_only = judge_rounds(rounds, P99, sequential=False)  # any limit: a stopped B is no pass
    assert p99_only.verdict == InterleavedVerdict.FAIL


def test_a_b_too_slow_to_answer_a_p99_fails_the_p99_limit_on_its_largest_answer():
    """B 355x slower: 10 answers a window, too few for a p99, so the p99 was NOT GATED and the job exited 0."""
    rounds = [
        _round(i, 1000.0, 1000.0 / 355, b_p99=None, current_p99_at_least_ms=20.0 * 355 * (1 + i / 100))
        for i in range(1, 7)
    ]
    judged = judge_rounds(rounds, P99, sequential=False)
    assert judged.verdict == InterleavedVerdict.FAIL
    (p99,) = [f for f in judged.figures if f.figure == "p99"]
    assert p99.at_least_rounds == [1, 2, 3, 4, 5, 6] and p99.ratio.low > 300
    assert "at least: B answered too few times for a p99" in paired.figure_line(p99)


def test_a_p99_at_least_a_figure_under_the_limit_is_inconclusive_not_a_pass():
    """Its largest answer is a floor of B's p99: clear of the limit on it says nothing of the p99 itself."""
    rounds = [_round(i, 1000.0, 30.0, b_p99=None, current_p99_at_least_ms=15.0 + i / 10) for i in range(1, 7)]
    assert judge_rounds(rounds, P99, sequential=False).verdict == InterleavedVerdict.INCONCLUSIVE


def test_a_window_too_short_for_a_p99_keeps_its_largest_answer_and_one_with_a_p99_none():
    short = load_point("b", p99_ms=7000.0)
    short = replace(
        short,
        latency_ms=replace(short.latency_ms, service=replace(short.latency_ms.service, p99=None, max=7100.0, count=10)),
    )
    assert round_figures(short, "service")["at_least"] == 7100.0
    assert round_figures(load_point("a"), "service")["at_least"] is None


def test_rounds_numbered_out_of_order_or_twice_cannot_be_judged():
    """A hand-edited record (issue 50's hostile pass: rounds numbered -3 were accepted and judged): rounds are
    numbered 1, 2, ... each once, or the record cannot be judged."""
    limits = {"texts_per_s": 0.95, "p50": None, "p99": None}
    for numbers in ([-3, 1, 2], [1, 1, 2], [0, 1, 2]):
        rounds = [_round(i, 1000.0, 1000.0) for i in numbers]
        judged = judge_rounds(rounds, limits, sequential=False)
        assert judged.verdict == InterleavedVerdict.CANNOT_JUDGE and "round numbers" in (judged.why or ""), judged
    numbered = [_round(i, 1000.0, 1000.0) for i in (1, 2, 3)]
    assert judge_rounds(numbered, limits, sequential=False).verdict == InterleavedVerdict.PASS
