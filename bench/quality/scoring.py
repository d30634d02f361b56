"""Scores from per-query values: per-target metric records (means with bootstrap intervals) and the
pairwise comparisons.

Used by the pipeline as each target finishes, and by the report to rebuild metrics a cut-off run
never wrote (from its run file and the qrels written beside the results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bench.quality.metrics import Measure
from bench.quality.significance import bootstrap_ci, compare_pairs, seeded_generator
from bench.quality.under_load import meaningful_pair
from bench.results.schema import ComparisonRecord, MetricRecord, Relevance

PERMUTATIONS = 10_000
BOOTSTRAP = 10_000


def short_rankings(measures: list[Measure], longest: int | None, documents: int) -> dict[str, int]:
    """measure -> `longest` (the most documents a target ranked for a query) for each measure whose cut-off is past
    it and past none of the corpus: an app that answers only its top k, a reranker endpoint that answers `top_n`.
    Such a measure is "over N documents" wherever it is shown, and never tested against a ranking of another
    length. A corpus smaller than the cut-off is no target's limit, so it labels nothing."""
    if longest is None:
        return {}
    return {m.trec_name: longest for m in measures if (k := m.cutoff or m.truncate) and longest < min(k, documents)}


def over_documents(ranked: int) -> str:
    """How a measure past a ranking's length is labelled: "over 10 documents", "over 1 document"."""
    return f"over {ranked} document{'' if ranked == 1 else 's'}"


def metric_records(
    name: str,
    per_query: dict[str, dict[str, float]],
    labels: dict[str, str],
    relevance: dict[str, Relevance],
    seed: int,
    ranked: dict[str, int] | None = None,
) -> list[MetricRecord]:
    """One record per measure of `per_query` (measure -> qid -> value) for target `name`; `ranked`: the measures
    over a ranking shorter than their cut-off (`short_rankings`)."""
    records = []
    for measure, values in per_query.items():
        # Seeded by the measure, not the target: identical score sets get identical intervals (a target idle and
        # under load, or renamed).
        low, high = bootstrap_ci(np.array(list(values.values())), BOOTSTRAP, seeded_generator(seed, measure))
        records.append(
            MetricRecord(
                target=name,
                measure=measure,
                label=labels.get(measure, measure),
                mean=sum(values.values()) / len(values),
                ci_low=low,
                ci_high=high,
                queries=len(values),
                per_query=values,
                relevance=relevance.get(measure, Relevance.QRELS),
                ranked=(ranked or {}).get(measure),
            )
        )
    return records


def comparisons(
    metrics: list[MetricRecord], measures: list[str], seed: int, reranked: Sequence[tuple[str, str]] = ()
) -> list[ComparisonRecord]:
    """Every meaningful pair of targets on every measure (under `--background`: each loaded run against its idle run,
    the targets against each other at idle, and each reranked target against its first stage at the same rate:
    `reranked`, bench/quality/rerank_pairs.py), Holm across those pairs of each measure."""
    found: list[ComparisonRecord] = []
    extra = {frozenset(pair) for pair in reranked}
    for measure in measures:
        per_query = {m.target: m.per_query for m in metrics if m.measure == measure}
        ranked = {m.target: m.ranked for m in metrics if m.measure == measure}
        found += compare_pairs(per_query, measure, seed, PERMUTATIONS, BOOTSTRAP, _tested_pair(ranked, extra))
    return found


def _tested_pair(ranked: dict[str, int | None], extra: set[frozenset[str]]) -> Callable[[str, str], bool]:
    """A meaningful pair whose rankings have one length below the cut-off: rankings of different lengths are not
    tested (R@100 of 10 documents against R@100 of 100 measures the cut, not the targets)."""
    return lambda a, b: (meaningful_pair(a, b) or frozenset((a, b)) in extra) and ranked[a] == ranked[b]


def untested_lengths(
    metrics: list[MetricRecord], measure: str, reranked: Sequence[tuple[str, str]] = ()
) -> list[tuple[MetricRecord, MetricRecord]]:
    """The pairs of targets that `comparisons` would test on `measure` but for their rankings' lengths."""
    records = [m for m in metrics if m.measure == measure]
    extra = {frozenset(pair) for pair in reranked}
    return [
        (a, b)
        for i, a in enumerate(records)
        for b in records[i + 1 :]
        if a.ranked != b.ranked and (meaningful_pair(a.target, b.target) or frozenset((a.target, b.target)) in extra)
    ]
