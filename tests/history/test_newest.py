"""The newest run out of line: a prediction bound whose false-alarm rate is the stated one on normal noise (its rate
there: tests/history/test_newest_spread.py), higher on heavy-tailed noise; one-sided; said when it cannot be drawn."""

from __future__ import annotations

import numpy as np

from bench.history.newest import MIN_REFERENCE, out_of_line, runs_to_confirm
from bench.history.series import Gate, Observation, Scale, Series


def _series(values, scale=Scale.RATIO) -> Series:
    observations = [Observation(i, float(v)) for i, v in enumerate(values)]
    return Series("load", "tei embed", "texts/s", Gate.THROUGHPUT, scale, True, observations=observations)


def test_the_false_alarm_rate_on_heavy_tailed_noise_is_above_the_stated_one_and_said_so():
    """The bound is drawn for normal noise (issue 45: never wider than the runs' spread says); on Student t noise
    with 3 degrees of freedom its rate at 5% is 6-7% over 8 runs, as docs/ci.md states."""
    rng = np.random.default_rng(7)
    runs = MIN_REFERENCE
    draws = 1000 * (1 + 0.08 * rng.standard_t(3, size=(3000, runs + 1)))
    alarms = [out_of_line(_series(row), slice(0, runs), True, 0.05).past_bound for row in draws]
    assert 0.05 < np.mean(alarms) < 0.085  # 3000 series: the rate's sd is 0.0045


def test_only_the_side_the_limit_guards_is_out_of_line_and_a_difference_scale_is_not_bounded():
    flat = [1000.0 + d for d in (-3, 1, 2, -1, 0, 4, -2, 1, 0, -4)]
    slower, faster = _series([*flat, 700.0]), _series([*flat, 1300.0])
    assert out_of_line(slower, slice(0, 10), True, 0.01).past_bound
    assert not out_of_line(faster, slice(0, 10), True, 0.01).past_bound
    assert out_of_line(faster, slice(0, 10), False, 0.01).past_bound  # a latency: higher is worse
    assert out_of_line(_series([*flat, 700.0], Scale.DIFFERENCE), slice(0, 10), True, 0.01) is None
    assert out_of_line(slower, slice(4, 10), True, 0.01) is None  # 6 runs: too few for a bound


def test_runs_to_confirm_is_the_fewest_a_permutation_test_could_call_a_change():
    assert runs_to_confirm(12, 0.01) == 3  # C(14, 2) = 91 < 100 <= C(15, 3) = 455
    assert runs_to_confirm(200, 0.01) == 1
