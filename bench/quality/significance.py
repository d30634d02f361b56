"""Paired significance between targets: randomization and t-test, Holm correction, bootstrap interval.

Deterministic by construction: every random draw comes from numpy's PCG64 seeded with `seed`, so the
same inputs and seed give the same p-values bit for bit (unlike ranx's Fisher test).
"""

from __future__ import annotations

import hashlib

import numpy as np
from scipy import stats

from bench.results.schema import ComparisonRecord


def seeded_generator(seed: int, *names: str) -> np.random.Generator:
    """A generator that depends only on the seed and the names it is for (not on run order)."""
    key = int.from_bytes(hashlib.sha256("\0".join(names).encode()).digest()[:8], "little")
    return np.random.Generator(np.random.PCG64([seed, key]))


def randomization_test(diff: np.ndarray, permutations: int, rng: np.random.Generator) -> float:
    """Two-sided paired randomization (sign-flip) test of mean(diff) = 0, with the +1 correction
    so that p is never 0 (Phipson & Smyth 2010)."""
    observed = abs(diff.mean())
    if not np.any(diff):
        return 1.0
    extreme = 0
    for start in range(0, permutations, 1000):  # blocks bound memory for large query sets
        size = min(1000, permutations - start)
        signs = rng.integers(0, 2, size=(size, diff.size), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diff) / diff.size
        # A small tolerance counts permutations equal to the observed mean as "as extreme".
        extreme += int(np.count_nonzero(means >= observed - 1e-12))
    return (extreme + 1) / (permutations + 1)


def bootstrap_ci(values: np.ndarray, samples: int, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of the mean."""
    if values.size == 0:
        return float("nan"), float("nan")
    means = np.empty(samples)
    for start in range(0, samples, 1000):
        size = min(1000, samples - start)
        idx = rng.integers(0, values.size, size=(size, values.size))
        means[start : start + size] = values[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def paired_ttest(a: np.ndarray, b: np.ndarray) -> float:
    diff = b - a
    if not np.any(diff):
        return 1.0
    if np.all(diff == diff[0]):  # constant non-zero difference: t is infinite
        return 0.0
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
    per_query: dict[str, dict[str, float]], measure: str, seed: int = 0, permutations: int = 10_000, bootstrap: int = 10_000
) -> list[ComparisonRecord]:
    """Every pair of targets on one measure, Holm-corrected. `per_query`: target -> qid -> value.

    Each pair draws from its own generator seeded by (seed, hash of the two names), so a pair's
    p-value and interval do not depend on which other targets ran.
    """
    names = list(per_query)
    qids = sorted(per_query[names[0]]) if names else []
    comparisons = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            va = np.array([per_query[a][q] for q in qids], dtype=np.float64)
            vb = np.array([per_query[b][q] for q in qids], dtype=np.float64)
            diff = vb - va
            rng = seeded_generator(seed, a, b)
            low, high = bootstrap_ci(diff, bootstrap, rng)
            comparisons.append(ComparisonRecord(
                measure=measure, a=a, b=b, n=len(qids), mean_a=float(va.mean()), mean_b=float(vb.mean()),
                mean_diff=float(diff.mean()), ci_low=low, ci_high=high,
                p_randomization=randomization_test(diff, permutations, rng), p_ttest=paired_ttest(va, vb),
                p_randomization_holm=float("nan"), p_ttest_holm=float("nan"), permutations=permutations,
            ))
    for field, adjusted in (("p_randomization", "p_randomization_holm"), ("p_ttest", "p_ttest_holm")):
        for comparison, p in zip(comparisons, holm([getattr(c, field) for c in comparisons])):
            setattr(comparison, adjusted, p)
    return comparisons
