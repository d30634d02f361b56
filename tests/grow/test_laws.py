"""Growth laws fitted on synthetic latency curves whose law is known (numpy, seeded)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.grow.laws import MIN_RUNGS, choose_law, fit_law

SIZES = np.array([1e3, 2e3, 4e3, 8e3, 16e3, 32e3, 64e3])
CURVES = {
    "constant": lambda n: 40.0 + 0.0 * n,
    "log": lambda n: 5.0 + 3.0 * np.log(n),
    "linear": lambda n: 5.0 + 0.02 * n,
    "n log n": lambda n: 2.0 + 2e-4 * n * np.log(n),
    "quadratic": lambda n: 3.0 + 4e-7 * n**2,
}


@pytest.mark.parametrize("law", list(CURVES))
def test_a_clean_curve_gets_its_own_law_back(law):
    values = CURVES[law](SIZES)
    fit = choose_law(SIZES, values)
    assert fit is not None and fit.law == law
    assert fit.held_out_error < 1e-6 and fit.fit_error < 1e-6
    assert np.allclose(fit.predict(SIZES), values, rtol=1e-6)


@pytest.mark.parametrize("law", ["linear", "n log n"])
def test_fitted_on_rungs_up_to_a_quarter_of_the_largest_it_predicts_the_largest_within_25_percent(law):
    rng = np.random.default_rng(34)
    truth = CURVES[law](SIZES)
    measured = truth * (1 + 0.02 * rng.standard_normal(len(SIZES)))  # 2% measurement noise
    small = np.less_equal(SIZES, SIZES[-1] / 4)
    fit = choose_law(SIZES[small], measured[small])
    assert fit is not None and fit.points == int(small.sum())
    predicted = fit.predict(SIZES[-1]).item()
    assert abs(predicted - truth[-1]) / truth[-1] < 0.25


def test_noise_on_a_flat_curve_is_not_taken_for_growth():
    rng = np.random.default_rng(1)
    values = 40.0 * (1 + 0.03 * rng.standard_normal(len(SIZES)))
    fit = choose_law(SIZES, values)
    assert fit is not None and fit.law in ("constant", "log")
    assert abs(fit.predict(1e6).item() - 40.0) / 40.0 < 0.25  # extrapolated far out, it stays near the level


def test_the_size_at_which_a_law_reaches_a_latency_inverts_it():
    fit = choose_law(SIZES, CURVES["n log n"](SIZES))
    assert fit is not None
    size = fit.reaches(2000.0)
    assert size is not None and size > SIZES[-1]
    assert fit.predict(size).item() == pytest.approx(2000.0, rel=1e-6)
    assert choose_law(SIZES, CURVES["constant"](SIZES)).reaches(2000.0) is None  # type: ignore[union-attr]


def test_too_few_rungs_give_no_law():
    assert choose_law(SIZES[: MIN_RUNGS - 1], CURVES["linear"](SIZES[: MIN_RUNGS - 1])) is None


def test_the_fit_weighs_each_point_by_its_relative_error():
    # a curve spanning decades: an absolute fit would follow the largest point; relative fits all points alike
    sizes = np.array([10.0, 100.0, 1000.0])
    values = np.array([1.0, 10.0, 120.0])
    a, b = fit_law("linear", sizes, values)
    relative = np.abs(a + b * sizes - values) / values
    assert relative.max() < 0.2


def test_growth_seen_only_in_the_last_rung_leaves_the_credible_laws_apart():
    # a fixed cost per query then a scan: flat for four rungs, rising at the fifth (bm25's shape, docs/grow.md)
    sizes = np.array([750.0, 1500.0, 3000.0, 7500.0, 15000.0])
    values = np.array([0.60, 0.57, 0.63, 0.61, 0.89])
    fit = choose_law(sizes, values)
    assert fit is not None and fit.law == "constant"  # no fold sees the growth: the choice cannot be the rungs'
    names = [law for law, _, _ in fit.credible]
    assert "constant" in names and "linear" in names and "quadratic" not in names
    low, high = fit.spread(75000.0)
    assert low == pytest.approx(fit.predict(75000.0).item()) and high > 2 * low  # stated as untrustworthy


def test_a_clean_curve_has_one_credible_law_or_ones_that_agree():
    fit = choose_law(SIZES, CURVES["linear"](SIZES))
    assert fit is not None
    low, high = fit.spread(4 * SIZES[-1])
    assert high / low < 1.01
    assert fit.reaches_range(1e4)[0] == pytest.approx(fit.reaches(1e4), rel=1e-3)


def test_a_credible_law_that_never_reaches_the_latency_leaves_the_range_open():
    fit = choose_law(np.array([750.0, 1500.0, 3000.0, 7500.0, 15000.0]), np.array([0.60, 0.57, 0.63, 0.61, 0.89]))
    assert fit is not None
    low, high = fit.reaches_range(50.0)
    assert low is not None and high is None  # constant is credible: it never reaches 50 ms
