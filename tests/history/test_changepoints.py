"""The detector on synthetic series: a step found at its run with its size; no change, no change point (seeded)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.history.changepoints import DetectorSettings, detect, runs_since_last_change
from bench.history.series import Gate, Observation, Scale, Series


def _series(values, gate=Gate.THROUGHPUT, scale=Scale.RATIO) -> Series:
    observations = [Observation(i, float(v)) for i, v in enumerate(values)]
    return Series("load", "tei embed", "texts/s", gate, scale, True, observations=observations)


def _noisy(n: int, seed: int, spread: float = 0.05) -> np.ndarray:
    return 1000 * (1 + spread * np.random.default_rng(seed).standard_normal(n))


def test_a_step_is_found_at_its_run_with_its_size_interval_and_segment_means():
    values = _noisy(40, seed=1)
    values[25:] *= 0.7
    (change,) = detect(_series(values))
    assert change.position == 25 and change.run == 25
    assert change.before == pytest.approx(values[:25].mean()) and change.after == pytest.approx(values[25:].mean())
    assert change.size == pytest.approx(change.after / change.before)
    assert change.low < change.size < change.high and change.low > 0.6 and change.high < 0.8
    assert change.p_value < 0.01


@pytest.mark.parametrize("seed", range(5))
def test_no_change_gives_no_change_point(seed):
    assert detect(_series(_noisy(60, seed)), DetectorSettings(seed=seed)) == []


def test_the_same_series_gives_the_same_answer():
    values = _noisy(50, seed=3)
    values[30:] *= 0.85
    assert detect(_series(values)) == detect(_series(values))


def test_one_wild_run_is_not_a_change():
    values = _noisy(50, seed=4)
    values[20] *= 5
    values[-1] *= 0.2
    assert detect(_series(values)) == []


def test_two_steps_are_both_found_and_the_newest_segment_is_what_follows_the_last():
    values = np.concatenate([_noisy(30, 5), 0.8 * _noisy(30, 6), 1.1 * _noisy(30, 7)])
    changes = detect(_series(values))
    assert [c.position for c in changes] == [30, 60]
    assert runs_since_last_change(_series(values)) == list(range(60, 90))
    assert runs_since_last_change(_series(_noisy(20, 9))) == list(range(20))


def test_a_quality_drop_is_tested_paired_by_query_and_sized_as_a_difference():
    rng = np.random.default_rng(0)
    base = rng.beta(2, 2, size=300)
    qids = tuple(f"q{i:03d}" for i in range(300))
    hurt = rng.choice(300, size=60, replace=False)
    observations = []
    for run in range(12):
        scores = base.copy()
        if run >= 7:
            scores[hurt] -= 0.1  # 0.02 nDCG@10 on average
        observations.append(Observation(run, float(scores.mean()), tuple(scores), qids=qids))
    series = Series(
        "quality", "bm25", "nDCG@10", Gate.QUALITY, Scale.DIFFERENCE, True, "ndcg_cut_10", qids, observations
    )
    (change,) = detect(series)
    assert change.position == 7
    assert change.size == pytest.approx(-0.02)
    assert change.low < -0.015 and change.high < 0
    assert "paired" in change.test and change.p_value < 1e-6


def test_a_constant_quality_series_has_no_change_point():
    qids = ("a", "b")
    observations = [Observation(run, 0.5, (0.4, 0.6), qids=qids) for run in range(10)]
    series = Series(
        "quality", "bm25", "nDCG@10", Gate.QUALITY, Scale.DIFFERENCE, True, "ndcg_cut_10", qids, observations
    )
    assert detect(series) == []


def test_differences_below_the_scores_resolution_are_no_change_and_a_real_drop_still_is():
    """Issue 50: 8 runs of one served target (same cache, same scores but for float rounding), then a real drop at
    run 9: the rounding (2e-9 a query, one sign from run 5) was a change point of +0.0000 at p 2.4e-05."""
    rng = np.random.default_rng(3)
    base = rng.beta(2, 2, size=200)
    qids = tuple(f"q{i:03d}" for i in range(200))
    hurt = rng.choice(200, size=60, replace=False)
    observations = []
    for run in range(10):
        scores = base + (rng.uniform(0, 2e-9, size=200) if run >= 4 else 0.0)
        if run >= 8:
            scores[hurt] -= 0.25
        observations.append(Observation(run, float(scores.mean()), tuple(scores), qids=qids))
    series = Series(
        "quality", "bm25", "nDCG@10", Gate.QUALITY, Scale.DIFFERENCE, True, "ndcg_cut_10", qids, observations
    )
    (change,) = detect(series)
    assert change.position == 8 and change.size == pytest.approx(-0.075, abs=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_a_step_many_times_the_noise_is_not_flattened_by_the_clip(seed):
    # ±1% noise, 12 runs, then a 23% drop: three slow runs at the end are as separated as runs can be
    # (p = 1/455 by ranks); clipped about the whole segment's median they looked like 3 sd, no change
    values = np.concatenate([_noisy(12, seed, spread=0.01), 0.77 * _noisy(3, seed + 10, spread=0.01)])
    (change,) = detect(_series(values))
    assert change.position == 12 and change.size == pytest.approx(0.77, abs=0.02)
