"""The results file's quality and demo records: per target, per query, per measure, and each pair compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bench.core.secrets import VERBATIM
from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.cost import NO_COST_BLOCK, CostBlock


class TargetStatus(StrEnum):
    """A quality target: it measured every query, or it ended part-way (its error says why)."""

    OK = "ok"
    FAILED = "failed"


class Relevance(StrEnum):
    """What a measure is scored against: the qrels, the reference answers (containment in the returned texts), or
    the generated answers."""

    QRELS = "qrels"
    ANSWERS = "answers"
    GENERATED = "generated"


@dataclass
class TargetSpecRecord:
    """The target's spec as quality parsed it (bench/targets/registry.py), secret parameters masked: what the
    report pairs a reranked target with its own first stage by, never parsing the spec string again."""

    kind: str
    rerank: bool = False
    variant: str | None = None
    url: str | None = None
    params: dict[str, str] = field(default_factory=dict)


@dataclass
class TargetRecord:
    name: str
    spec: str  # as given on the command line, URL included (never secrets: those come from the environment)
    status: TargetStatus  # ok | failed
    config: dict[str, Any]  # Target.describe(): engine settings, server facts
    index_seconds: float
    search_seconds: float
    queries: int
    errors: int
    empty: int  # queries with an empty ranking (scored as zero)
    latency_ms: dict[str, float]  # p50, p90, p99, mean, max; empty when queries ran in one batch (search_seconds)
    cost: dict[str, float]  # per-query means of each cost counter
    warnings: dict[str, int]  # anomaly name -> number of queries
    scores_replaced: bool  # engine scores tied or did not strictly decrease; rank-derived scores were written
    run_file: str  # relative to the results file
    error: str | None = None
    #: questions whose generated answer failed (quality --generate): scored as zero, like `errors`
    answer_errors: int = 0
    #: parts of the per-query latency (embed_ms, search_ms, rerank_ms) -> p50, p99; targets that name an endpoint
    latency_parts_ms: dict[str, dict[str, float]] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: what embedding cost, by phase (ingest, query_embed): texts, from_cache, tokens, wall_s, texts_per_s, ...
    cost_blocks: dict[str, CostBlock] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: the spec parsed (absent in files written before it: the report parses `spec` for those alone)
    parsed: TargetSpecRecord | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    record: str = "target"

    def cost_block(self, phase: str) -> CostBlock:
        """The phase's cost block (`ingest`, `query_embed`); where the record has none, an empty one whose every
        `.get` is None."""
        return self.cost_blocks.get(phase) or NO_COST_BLOCK


@dataclass
class QueryRecord:
    target: str
    qid: str = field(metadata=VERBATIM)
    latency_ms: float | None  # None: ranked in a batch with the others (local engines), no time of its own
    hits: int
    error: str | None = None
    cost: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    answer: str | None = None  # the generated answer (quality --generate); its cost is in `cost` (answer_*)
    answer_error: str | None = None  # why no answer was generated
    #: parts of latency_ms: embed_ms, search_ms, rerank_ms (targets that name an endpoint)
    parts_ms: dict[str, float] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
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
    per_query: dict[str, float] = field(metadata=VERBATIM)  # qid -> score
    #: qrels | answers (containment in returned texts) | generated (answers scored)
    relevance: Relevance = Relevance.QRELS
    #: the most documents the target ranked for any query, where fewer than the measure's cut-off and the corpus:
    #: the measure is "over N documents" (an app that answers only its top k), never tested against another length
    ranked: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
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
