"""Paired significance between targets: randomization and t-test, Holm correction, bootstrap interval.

Deterministic by construction: every random draw comes from numpy's PCG64 seeded with `seed`, so the
same inputs and seed give the same p-values bit for bit (unlike ranx's Fisher test).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

# Moved to bench.core.resample (load points' intervals use it too); re-exported for the quality code.
from bench.core.resample import seeded_generator as seeded_generator
from bench.results.schema import ComparisonRecord

BLOCK = 1000  # permutations or resamples drawn at once: bounds memory for large query sets


def randomization_tests(diffs: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Two-sided paired randomization (sign-flip) tests of mean = 0, one per column of `diffs` (queries x
    columns), with the +1 correction so that p is never 0 (Phipson & Smyth 2010). The columns share the
    sign flips (the measures of one pair of systems: one draw instead of one per measure); each column's
    test is exact on its own."""
    n, k = diffs.shape
    observed = np.abs(diffs.mean(axis=0))
    totals = diffs.sum(axis=0)
    extreme = np.zeros(k, dtype=np.int64)
    # One BLAS thread: on busy cores OpenBLAS's threads made this product ~100x slower (20 ms vs 0.12 ms).
    with threadpool_limits(1, user_api="blas"):
        for start in range(0, permutations, BLOCK):
            size = min(BLOCK, permutations - start)
            # One fair random bit per query and permutation; flips s = 2*bit - 1 give sum(s*d) = 2*(bit.d) - sum(d).
            bits = np.unpackbits(rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8), axis=1, count=n)
            means = np.abs(2.0 * (bits.astype(np.float64) @ diffs) - totals) / n
            # A small tolerance counts permutations equal to the observed mean as "as extreme".
            extreme += np.count_nonzero(means >= observed - 1e-12, axis=0)
    p = (extreme + 1) / (permutations + 1)
    p[~np.any(diffs, axis=0)] = 1.0
    return p


def randomization_test(diff: np.ndarray, permutations: int, rng: np.random.Generator) -> float:
    return float(randomization_tests(diff[:, None], permutations, rng)[0])


def bootstrap_cis(values: np.ndarray, samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile intervals of the mean of each column of `values` (queries x columns); the columns
    share the resampled query sets."""
    n, k = values.shape
    if n == 0:
        return np.full(k, np.nan), np.full(k, np.nan)
    means = np.empty((samples, k))
    offsets = np.arange(BLOCK)[:, None] * n
    with threadpool_limits(1, user_api="blas"):
        for start in range(0, samples, BLOCK):
            size = min(BLOCK, samples - start)
            idx = rng.integers(0, n, size=(size, n))
            # How often each query was drawn in each resample: the resample means of every column are then
            # one product (faster than gathering each column's values by index).
            counts = np.bincount((idx + offsets[:size]).ravel(), minlength=size * n).reshape(size, n)
            means[start : start + size] = (counts.astype(np.float64) @ values) / n
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return low, high


def bootstrap_ci(values: np.ndarray, samples: int, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of the mean."""
    low, high = bootstrap_cis(values[:, None], samples, rng)
    return float(low[0]), float(high[0])


def detectable_drop(sd: float | None, n: int, alpha: float, power: float) -> float | None:
    """The smallest true mean difference a two-sided paired test at level `alpha` on `n` queries finds with
    probability `power`, given the per-query differences' standard deviation `sd`:
    (t(1 - alpha/2, n-1) + t(power, n-1)) x sd / sqrt(n): the paired t-test's power by the shift approximation
    (the randomization test's is close to it). None with fewer than two queries."""
    if sd is None or n < 2:
        return None
    from scipy import stats  # imported here: ~0.6 s that a report without it does not need

    return float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) * sd / math.sqrt(n))


def paired_ttest(a: np.ndarray, b: np.ndarray) -> float:
    diff = b - a
    if not np.any(diff):
        return 1.0
    if np.all(diff == diff[0]):  # constant non-zero difference: t is infinite
        return 0.0
    from scipy import stats  # imported here: ~0.6 s that `compare` does not need

    return float(stats.ttest_rel(b, a).pvalue)


def holm(pvalues: list[float]) -> list[float]:
    """Holm–Bonferroni step-down adjustment, monotone and capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for position, i in enumerate(order):
        running = max(running, min(1.0, (m - position) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def compare_pairs(
    per_query: dict[str, dict[str, float]],
    measure: str,
    seed: int = 0,
    permutations: int = 10_000,
    bootstrap: int = 10_000,
    meaningful: Callable[[str, str], bool] = lambda a, b: True,
) -> list[ComparisonRecord]:
    """Every pair of targets on one measure that `meaningful` keeps, Holm-corrected over those pairs only.
    `per_query`: target -> qid -> value.

    Each pair draws from its own generator seeded by (seed, hash of the two names), so a pair's
    p-value and interval do not depend on which other targets ran.
    """
    names = list(per_query)
    qids = sorted(per_query[names[0]]) if names else []
    comparisons = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if not meaningful(a, b):
                continue
            va = np.array([per_query[a][q] for q in qids], dtype=np.float64)
            vb = np.array([per_query[b][q] for q in qids], dtype=np.float64)
            diff = vb - va
            rng = seeded_generator(seed, a, b)
            low, high = bootstrap_ci(diff, bootstrap, rng)
            comparisons.append(
                ComparisonRecord(
                    measure=measure,
                    a=a,
                    b=b,
                    n=len(qids),
                    mean_a=float(va.mean()),
                    mean_b=float(vb.mean()),
                    mean_diff=float(diff.mean()),
                    ci_low=low,
                    ci_high=high,
                    p_randomization=randomization_test(diff, permutations, rng),
                    p_ttest=paired_ttest(va, vb),
                    p_randomization_holm=float("nan"),
                    p_ttest_holm=float("nan"),
                    permutations=permutations,
                )
            )
    for field, adjusted in (("p_randomization", "p_randomization_holm"), ("p_ttest", "p_ttest_holm")):
        for comparison, p in zip(comparisons, holm([getattr(c, field) for c in comparisons])):
            setattr(comparison, adjusted, p)
    return comparisons
