"""The results file: one versioned schema, JSON Lines, written record by record as results arrive.

Every line is one JSON object with a `record` field. The first line is the `run` header; then, per
target, a `target` record and one `query` record per query (written when the target finishes);
`metrics` and `comparison` records when scoring is done; an `end` record last. A file without an
`end` record was interrupted: everything before the cut is still valid. Reports are built from this
file alone, so every number in a report traces back to a record here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA = "ragbench.results"
VERSION = 2
# Versions this ragbench still reads (older files load; new fields take their defaults).
READABLE_VERSIONS = (1, 2)


@dataclass
class RunHeader:
    command: str
    created: str  # ISO 8601, UTC
    ragbench_version: str
    dataset: dict[str, Any]  # name, source, format, split, fingerprint, counts, notes
    measures: list[str]  # trec names
    measure_labels: dict[str, str]  # trec name -> label (nDCG@10)
    depth: int
    seed: int
    targets: list[str]  # names, in the order they run
    measure_relevance: dict[str, str] = field(default_factory=dict)  # trec name -> qrels | answers | generated
    record: str = "run"
    schema: str = SCHEMA
    version: int = VERSION


@dataclass
class TargetRecord:
    name: str
    spec: str  # as given on the command line, URL included (never secrets: those come from the environment)
    status: str  # ok | failed
    config: dict[str, Any]  # Target.describe(): engine settings, server facts
    index_seconds: float
    search_seconds: float
    queries: int
    errors: int
    empty: int  # queries with an empty ranking (scored as zero)
    latency_ms: dict[str, float]  # p50, p90, p99, mean, max
    cost: dict[str, float]  # per-query means of each cost counter
    warnings: dict[str, int]  # anomaly name -> number of queries
    scores_replaced: bool  # engine scores did not follow the rank order; rank-derived scores were written
    run_file: str  # relative to the results file
    error: str | None = None
    record: str = "target"


@dataclass
class QueryRecord:
    target: str
    qid: str
    latency_ms: float
    hits: int
    error: str | None = None
    cost: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    record: str = "query"


@dataclass
class MetricRecord:
    target: str
    measure: str  # trec name
    label: str
    mean: float
    ci_low: float  # 95% bootstrap percentile interval of the mean over queries
    ci_high: float
    queries: int
    per_query: dict[str, float]
    relevance: str = "qrels"  # qrels | answers (containment in returned texts) | generated (answers scored)
    record: str = "metrics"


@dataclass
class ComparisonRecord:
    measure: str
    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    mean_diff: float  # b - a
    ci_low: float
    ci_high: float
    p_randomization: float
    p_ttest: float
    p_randomization_holm: float
    p_ttest_holm: float
    permutations: int
    record: str = "comparison"


@dataclass
class EndRecord:
    status: str  # complete | interrupted | failed
    finished: str
    error: str | None = None
    record: str = "end"


RECORD_TYPES = {
    "run": RunHeader, "target": TargetRecord, "query": QueryRecord, "metrics": MetricRecord,
    "comparison": ComparisonRecord, "end": EndRecord,
}
