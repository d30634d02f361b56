"""The results file: one versioned schema, JSON Lines, written record by record as results arrive.

Every line is one JSON object with a `record` field. The first line is the `run` header; then, per
target, a `target` record and one `query` record per query (written when the target finishes);
`metrics` and `comparison` records when scoring is done; an `end` record last. `ragbench load`
writes the same `run` header, then one `load_point` record per sweep point, then `end`. A file without an
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
    load: dict[str, Any] | None = None  # `ragbench load`: endpoints and sweep settings
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
    latency_ms: dict[str, float]  # p50, p90, p99, mean, max; empty when queries ran in one batch (search_seconds)
    cost: dict[str, float]  # per-query means of each cost counter
    warnings: dict[str, int]  # anomaly name -> number of queries
    scores_replaced: bool  # engine scores tied or did not strictly decrease; rank-derived scores were written
    run_file: str  # relative to the results file
    error: str | None = None
    record: str = "target"


@dataclass
class QueryRecord:
    target: str
    qid: str
    latency_ms: float | None  # None: ranked in a batch with the others (local engines), no time of its own
    hits: int
    error: str | None = None
    cost: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    answer: str | None = None  # the generated answer (quality --generate); its cost is in `cost` (answer_*)
    answer_error: str | None = None  # why no answer was generated
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
class LoadPointRecord:
    """One point of a `ragbench load` sweep (docs/load.md defines every field)."""

    endpoint: str
    op: str  # embed | rerank
    loop: str  # closed | open | burst
    batch: int  # texts per request (rerank: documents per query)
    concurrency: int | None  # closed: virtual users; burst: in-flight cap (0 = none); open: None
    rate: float | None  # open: offered requests/s
    arrival: str | None  # open: constant | poisson | gamma:CV
    duration_s: float  # measured: window start -> last measured answer
    requests: dict[str, Any]  # sent, ok, errors {class: n}, unsent, validated
    throughput: dict[str, Any]  # requests_per_s, texts_per_s, tokens_per_s, tokens_source
    latency_ms: dict[str, Any]  # service, scheduled, dispatch_delay: {p50,p90,p99,p999,max,mean,count} or None
    server_ms: dict[str, Any]  # queue, tokenization, inference (TEI headers), same blocks or None
    server_metrics: dict[str, Any] | None  # deltas of TEI's te_* /metrics over the point
    client: dict[str, Any]  # workers, cpu_percent, saturated, loop_lag_p99_ms
    max_inflight: int | None = None
    burst: int | None = None  # burst: texts (chunks) in the burst
    length: int | None = None  # --lengths: tokens (or words) per text
    documents: int | None = None  # rerank: candidates per query
    warmup_s: float = 0.0
    histograms: dict[str, Any] = field(default_factory=dict)  # quantity -> HDR encoding (exact CDFs, merging)
    error_examples: dict[str, str] = field(default_factory=dict)  # class -> first message seen
    record: str = "load_point"


@dataclass
class EndRecord:
    status: str  # complete | interrupted | failed
    finished: str
    error: str | None = None
    record: str = "end"


@dataclass
class CeilingPoint:
    """`ragbench ceiling`: the reference model's in-process throughput at one (length, batch) on one device/dtype."""

    model: str  # the model folder's name
    model_fingerprint: str
    op: str  # embed | rerank (a CrossEncoder reads query + document pairs)
    device: str  # cpu | cuda
    device_name: str
    dtype: str  # float32 | float16 | bfloat16
    batch: int
    length: int  # tokens per text asked for (special tokens included)
    tokens_per_text: float  # tokens the model read per input: specials in, truncated at max_seq_length
    max_seq_length: int
    texts: int  # inputs measured (after one warm-up batch)
    seconds: float
    texts_per_s: float
    tokens_per_s: float
    # FLOPs per token, from config.json (bench/load/ceiling.py). Not "flops_per_token": a field named like
    # "…_token" is masked as a secret by the results writer.
    token_flops: float
    achieved_tflops: float
    peak_tflops: float | None  # None: the device's peak is unknown (CPU, unlisted GPU) and --peak-tflops not given
    peak_source: str | None
    peak_fraction: float | None
    texts_fingerprint: str  # the texts of this length: the same fingerprint means the same texts
    record: str = "ceiling_point"


@dataclass
class GpuTelemetryRecord:
    """`ragbench size`: NVML samples over one load point's measured window, mean and max per GPU."""

    endpoint: str
    point: str  # the load point's label
    start: float  # time.monotonic() seconds: the window the samples fall in
    end: float
    gpus: list[dict[str, Any]]  # {"gpu", "name", "samples", quantity: {"mean", "max"}} (bench/load/telemetry.py)
    record: str = "gpu_telemetry"


@dataclass
class SizingRecord:
    """`ragbench size`: the answer for one endpoint and text length, every line naming its load points."""

    endpoint: str
    op: str
    length: int | None
    slo_p99_ms: float
    max_error_rate: float
    saturation: dict[str, Any] | None  # rate, texts_per_s, point, first_failure, probes [{rate, passed, point}]
    lines: list[dict[str, Any]]  # {"setting", "value", "why", "evidence": [point labels]}
    telemetry: str  # what NVML saw, or why there is no GPU telemetry (said once)
    ceiling: str | None = None  # the ceiling results file the fraction comes from
    record: str = "sizing"


RECORD_TYPES = {
    "run": RunHeader, "target": TargetRecord, "query": QueryRecord, "metrics": MetricRecord,
    "comparison": ComparisonRecord, "end": EndRecord, "load_point": LoadPointRecord,
    "ceiling_point": CeilingPoint, "gpu_telemetry": GpuTelemetryRecord, "sizing": SizingRecord,
}
