"""Paired tests: deterministic, correct against exact enumeration and scipy, Holm as published."""

import itertools

import numpy as np
import pytest
from scipy import stats

from bench.quality.scoring import metric_records
from bench.quality.significance import bootstrap_ci, compare_pairs, holm, randomization_test


def per_query(seed: int, n: int = 60, shift: float = 0.05):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a + rng.normal(shift, 0.15, n), 0, 1)
    return {"a": {str(i): float(a[i]) for i in range(n)}, "b": {str(i): float(b[i]) for i in range(n)}}


def test_same_input_and_seed_give_identical_p_values_bit_for_bit():
    data = per_query(1)
    first = compare_pairs(data, "m", seed=7)
    second = compare_pairs(data, "m", seed=7)
    assert [vars(c) for c in first] == [vars(c) for c in second]
    other = compare_pairs(data, "m", seed=8)
    assert other[0].p_randomization != first[0].p_randomization or other[0].ci_low != first[0].ci_low


def test_a_pairs_result_does_not_depend_on_other_targets():
    data = per_query(2)
    alone = compare_pairs(data, "m")[0]
    data_more = {"z": data["a"], **data}
    with_more = next(c for c in compare_pairs(data_more, "m") if (c.a, c.b) == ("a", "b"))
    assert (with_more.p_randomization, with_more.ci_low) == (alone.p_randomization, alone.ci_low)


def test_randomization_matches_exact_enumeration():
    diff = np.array([0.3, -0.1, 0.25, 0.05, 0.2, -0.05, 0.15, 0.1, 0.0, 0.12])
    observed = abs(diff.mean())
    flips = [abs((np.array(s) * diff).mean()) for s in itertools.product([-1, 1], repeat=diff.size)]
    exact = np.mean([f >= observed - 1e-12 for f in flips])
    got = randomization_test(diff, 20_000, np.random.Generator(np.random.PCG64(0)))
    assert got == pytest.approx(exact, abs=0.01)


def test_t_test_matches_scipy_and_identical_systems_give_one():
    data = per_query(3)
    c = compare_pairs(data, "m")[0]
    a, b = (np.array([data[k][str(i)] for i in range(60)]) for k in ("a", "b"))
    assert c.p_ttest == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-12)
    same = compare_pairs({"a": data["a"], "b": dict(data["a"])}, "m")[0]
    assert (same.p_randomization, same.p_ttest, same.mean_diff) == (1.0, 1.0, 0.0)


def test_holm_step_down():
    # Holm (1979): sorted p 0.01, 0.02, 0.04 with m=3 -> 0.03, 0.04, 0.04 (monotone).
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def test_bootstrap_interval_covers_the_mean_and_shrinks_with_n():
    rng = np.random.Generator(np.random.PCG64(0))
    small_sample, large_sample = np.random.default_rng(0).random(30), np.random.default_rng(1).random(3000)
    small, large = bootstrap_ci(small_sample, 5000, rng), bootstrap_ci(large_sample, 5000, rng)
    assert small[0] < small_sample.mean() < small[1]
    assert large[0] < large_sample.mean() < large[1]
    assert (large[1] - large[0]) < (small[1] - small[0]) / 5


def test_under_background_only_meaningful_pairs_are_tested_and_holm_runs_over_them_alone():
    """Each loaded run against its own idle run, and the targets against each other at idle: a cross pair
    (`dense@bg0` vs `hybrid@bg5`) or two loads of one target are not tested, and do not inflate Holm."""
    from bench.quality.scoring import comparisons, metric_records

    data = per_query(3, shift=0.1)
    runs = {"dense@bg0": data["a"], "hybrid@bg0": data["b"], "dense@bg5": data["b"], "hybrid@bg5": data["a"]}
    runs |= {"dense@bg9": data["a"], "hybrid@bg9": data["b"]}
    metrics = [r for name, values in runs.items() for r in metric_records(name, {"m": values}, {}, {}, 0)]
    pairs = {(c.a, c.b): c for c in comparisons(metrics, ["m"], 0)}
    assert set(pairs) == {
        ("dense@bg0", "hybrid@bg0"),
        ("dense@bg0", "dense@bg5"),
        ("dense@bg0", "dense@bg9"),
        ("hybrid@bg0", "hybrid@bg5"),
        ("hybrid@bg0", "hybrid@bg9"),
    }
    idle = pairs[("dense@bg0", "hybrid@bg0")]
    # Holm over the 5 meaningful pairs: at most 5 x the raw p (over all 15 pairs it would be up to 15 x).
    assert idle.p_randomization_holm <= min(1.0, 5 * idle.p_randomization) + 1e-12
    plain = compare_pairs(data, "m")  # without --background every pair is tested
    assert [(c.a, c.b) for c in plain] == [("a", "b")]


def test_identical_score_sets_get_identical_intervals_whatever_the_targets_name():
    """A target idle (`dense@bg0`) and under load (`dense@bg5.238`) with the same scores: the same interval."""
    values = dict(zip([f"q{i}" for i in range(40)], np.random.default_rng(3).random(40).tolist()))
    idle, loaded = (
        metric_records(name, {"ndcg_cut_10": values}, {}, {}, seed=0)[0] for name in ("dense@bg0", "dense@bg5.238")
    )
    assert (idle.ci_low, idle.ci_high) == (loaded.ci_low, loaded.ci_high)
