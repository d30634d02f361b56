"""Rerank identity: the same queries and candidates through every reranker; score differences,
Kendall tau of the order, and whether `top_n` was honoured."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau

from bench.core.errors import ServerError
from bench.endpoints.base import Reranker
from bench.identity.thresholds import Thresholds, judged
from bench.results.schema import Cause, IdentityRerankPairRecord

CANDIDATES = 10
RERANK_QUERIES = 10
TOP_N_PROBE = 3


@dataclass
class RerankTask:
    query: str
    candidates: list[str]


def rerank_tasks(texts: list[str], queries: list[str]) -> list[RerankTask]:
    """Up to 10 queries, each with a window of 10 texts (relevance does not matter; agreement does)."""
    tasks = []
    for i, query in enumerate(queries[:RERANK_QUERIES]):
        start = (i * CANDIDATES) % max(1, len(texts))
        window = (texts[start:] + texts[:start])[: min(CANDIDATES, len(texts))]
        tasks.append(RerankTask(query, window))
    return tasks


@dataclass
class RerankerRun:
    name: str
    scores: list[np.ndarray]  # per task, a score per candidate
    top_n_honoured: bool
    top_n_returned: int
    seconds: float


def run_reranker(reranker: Reranker, tasks: list[RerankTask]) -> RerankerRun:
    started = time.perf_counter()
    scores = []
    for task in tasks:
        result = reranker.rerank(task.query, task.candidates)
        if np.isnan(result.scores).any():
            raise ServerError(
                reranker.name, f"returned {len(result.order)} scores for {len(task.candidates)} documents without top_n"
            )
        scores.append(result.scores)
    probe = reranker.rerank(tasks[0].query, tasks[0].candidates, top_n=TOP_N_PROBE) if tasks else None
    returned = len(probe.order) if probe else 0
    return RerankerRun(reranker.name, scores, returned <= TOP_N_PROBE, returned, time.perf_counter() - started)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def compare_rerankers(a: RerankerRun, b: RerankerRun, thresholds: Thresholds) -> IdentityRerankPairRecord:
    diffs = np.concatenate([np.abs(x - y) for x, y in zip(a.scores, b.scores)]) if a.scores else np.zeros(1)
    taus = []
    for x, y in zip(a.scores, b.scores):
        if len(x) > 1:  # one candidate has no order to compare
            tau = kendalltau(x, y).statistic
            taus.append(1.0 if np.isnan(tau) else float(tau))  # constant scores on both sides: same order
    max_diff = float(diffs.max())
    tau_mean = float(np.mean(taus)) if taus else None
    failures, insufficient = [], []
    if max_diff > thresholds.max_score_diff:
        failures.append(f"max score difference {max_diff:.3g} > {thresholds.max_score_diff:g}")
    if tau_mean is None:
        insufficient.append("rank order: no query had two candidate texts to order")
    elif tau_mean < thresholds.min_kendall_tau:
        failures.append(f"mean Kendall tau {tau_mean:.4f} < {thresholds.min_kendall_tau}")
    return IdentityRerankPairRecord(
        a=a.name,
        b=b.name,
        dtype=thresholds.dtype,
        thresholds=thresholds.limits(),
        max_score_diff=max_diff,
        mean_score_diff=float(diffs.mean()),
        kendall_tau_mean=tau_mean,
        kendall_tau_min=float(np.min(taus)) if taus else None,
        verdict=judged(failures, insufficient),
        failures=failures,
        insufficient=insufficient,
        causes=_rerank_causes(a, b, max_diff, tau_mean, thresholds) if failures else [],
    )


def _rerank_causes(
    a: RerankerRun, b: RerankerRun, max_diff: float, tau_mean: float | None, thresholds: Thresholds
) -> list[Cause]:
    flat_a, flat_b = np.concatenate(a.scores), np.concatenate(b.scores)
    for raw, squashed in ((a, b), (b, a)):
        x, y = (flat_a, flat_b) if raw is a else (flat_b, flat_a)
        if np.abs(_sigmoid(x) - y).max() <= thresholds.max_score_diff * 10:
            return [
                Cause(
                    "raw_scores",
                    raw.name,
                    f"{raw.name} returns raw logits; {squashed.name} returns sigmoid(logit)",
                    f"set raw_scores=false on {raw.name} (or true on {squashed.name})",
                )
            ]
    if tau_mean is None or tau_mean >= thresholds.min_kendall_tau:
        return [
            Cause(
                "numeric",
                None,
                f"same order, scores differ by up to {max_diff:.3g}",
                "compare dtypes or loosen --dtype",
            )
        ]
    return [
        Cause(
            "different_model",
            None,
            f"the order differs (mean Kendall tau {tau_mean:.3f})",
            "check the reranker model each path serves",
        )
    ]
