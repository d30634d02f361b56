"""Scores from per-query values: per-target metric records (means with bootstrap intervals) and the
pairwise comparisons.

Used by the pipeline as each target finishes, and by the report to rebuild metrics a cut-off run
never wrote (from its run file and the qrels written beside the results).
"""

from __future__ import annotations

import numpy as np

from bench.quality.significance import bootstrap_ci, compare_pairs, seeded_generator
from bench.quality.under_load import meaningful_pair
from bench.results.schema import ComparisonRecord, MetricRecord, Relevance

PERMUTATIONS = 10_000
BOOTSTRAP = 10_000


def metric_records(
    name: str,
    per_query: dict[str, dict[str, float]],
    labels: dict[str, str],
    relevance: dict[str, Relevance],
    seed: int,
) -> list[MetricRecord]:
    """One record per measure of `per_query` (measure -> qid -> value) for target `name`."""
    records = []
    for measure, values in per_query.items():
        low, high = bootstrap_ci(np.array(list(values.values())), BOOTSTRAP, seeded_generator(seed, name, measure))
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
            )
        )
    return records


def comparisons(metrics: list[MetricRecord], measures: list[str], seed: int) -> list[ComparisonRecord]:
    """Every meaningful pair of targets on every measure (under `--background`: each loaded run against its idle run,
    and the targets against each other at idle), Holm across those pairs of each measure."""
    found: list[ComparisonRecord] = []
    for measure in measures:
        per_query = {m.target: m.per_query for m in metrics if m.measure == measure}
        found += compare_pairs(per_query, measure, seed, PERMUTATIONS, BOOTSTRAP, meaningful_pair)
    return found
