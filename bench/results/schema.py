"""The results file: one versioned schema for every command, JSON Lines, written record by record.

Every line is one JSON object with a `record` field naming its type. The first line is the `run`
header (which command wrote the file); an `end` record comes last. A file without an `end` record was
interrupted: everything before the cut is still valid. Between them, each command writes its own
record types (grouped below by command):
- quality / demo: per target a `target` record and one `query` record per query (written when the
  target finishes); `metrics` and `comparison` records when scoring is done;
- identity: `identity_endpoint` per endpoint, `identity_embed_pair` / `identity_rerank_pair` per
  compared pair, then one `identity` summary with the verdict;
- doctor: one `doctor_finding` per finding;
- load: one `load_point` per sweep point (the header's `load` holds endpoints and sweep settings);
- ceiling: one `ceiling_point` per measured point; size: load points, `gpu_telemetry` and `sizing` records.
Reports are built from this file alone, so every number in a report traces back to a record here.
docs/results.schema.json is generated from these classes (`python -m bench.results.json_schema`).
A float that is not finite (NaN: no value) is written as null and read back as NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bench.core.resample import Interval  # a mean and its interval: a block of load_point's intervals
from bench.core.secrets import VERBATIM
from bench.results.provenance import Gpu as Gpu  # blocks of the run header's provenance
from bench.results.provenance import Provenance
from bench.results.provenance import Runner as Runner

# A field added after version 2 that the writer leaves out while it holds its default (None, [], {} or False), so that
# a file which does not use it reads and writes back exactly as before (tests/results/v2); the schema does not
# require it.
WRITTEN_WHEN_SET = {"written_when_set": True}
# A field's description in docs/results.schema.json is its trailing comment, or else the `#:` lines right above it
# (bench/results/json_schema.py); a plain `#` line above fields heads a group and describes none of them.
SCHEMA = "ragbench.results"
# The single JSON documents identity and doctor write for `--out FILE.json` (their format before results.jsonl).
IDENTITY_DOCUMENT, DOCTOR_DOCUMENT = "ragbench.identity", "ragbench.doctor"
VERSION = 3
# Versions this ragbench still reads (older files load; new fields take their defaults).
READABLE_VERSIONS = (1, 2, 3)


@dataclass
class RunHeader:
    command: str  # quality | demo | identity | doctor | load | ...
    created: str  # ISO 8601, UTC
    ragbench_version: str
    # quality and demo only (other commands leave them empty):
    dataset: dict[str, Any] = field(default_factory=dict)  # name, source, format, split, fingerprint, counts, notes
    measures: list[str] = field(default_factory=list)  # trec names
    measure_labels: dict[str, str] = field(default_factory=dict)  # trec name -> label (nDCG@10)
    depth: int = 0
    seed: int = 0
    targets: list[str] = field(default_factory=list)  # names, in the order they run
    measure_relevance: dict[str, str] = field(default_factory=dict)  # trec name -> qrels | answers | generated
    load: dict[str, Any] | None = None  # `ragbench load`: endpoints and sweep settings
    record: str = "run"
    schema: str = SCHEMA
    version: int = VERSION
    #: `quality --hourly-usd`: the serving hardware's price per hour, for the report's $ costs; left out: none given
    hourly_usd: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: `--label NAME=VALUE` and a suite's [suite] labels, then the commit, branch and ci_run labels CI variables fill
    #: where the user gave none (provenance.ci_labels names those); left out: none
    labels: dict[str, str] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: the runner, the suite file's hash and the CI variables read (bench/results/provenance.py); left out: a file
    #: written before version 3
    provenance: Provenance | None = field(default=None, metadata=WRITTEN_WHEN_SET)


# --- quality and demo ----------------------------------------------------------------------------


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
    #: questions whose generated answer failed (quality --generate): scored as zero, like `errors`
    answer_errors: int = 0
    #: parts of the per-query latency (embed_ms, search_ms, rerank_ms) -> p50, p99; targets that name an endpoint
    latency_parts_ms: dict[str, dict[str, float]] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: what embedding cost, by phase (ingest, query_embed): texts, from_cache, tokens, wall_s, texts_per_s, ...
    cost_blocks: dict[str, dict[str, Any]] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    record: str = "target"


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


# --- identity --------------------------------------------------------------------------------------


class Verdict(StrEnum):
    """An identity check's outcome: a check without enough data to judge is not a pass either."""

    PASS = "pass"
    FAIL = "fail"
    INSUFFICIENT = "insufficient data"


@dataclass
class IdentityEndpointRecord:
    name: str
    config: dict[str, Any]  # the endpoint's describe(): kind, URL (masked), model, dtype
    seconds: float  # time spent waiting on this endpoint
    # embedding endpoints: a text alone vs the same text inside a batch
    batch_texts: int | None = None
    batch_min_cosine: float | None = None
    batch_threshold: float | None = None
    batch_verdict: Verdict | None = None
    # rerank endpoints: was top_n honoured
    top_n_requested: int | None = None
    top_n_returned: int | None = None
    top_n_honoured: bool | None = None
    record: str = "identity_endpoint"


@dataclass(frozen=True)
class Cause:
    """Why two endpoints differ, named by a probe or a signature (bench/identity/diagnose.py), and its fix."""

    #: not_normalised | dimensions_cut | dimensions_cut_not_renormalised | truncated | whitespace_stripped |
    #: prefix_missing | different_model | numeric | truncated_suspected | raw_scores | ...
    code: str
    endpoint: str | None  # the side that behaves differently, when known
    detail: str
    fix: str


@dataclass
class TokenLengthBucket:
    """How closely a pair agrees on the texts of one token-length range."""

    tokens: str  # the range: 0-128, 129-256, 257-512, 513+
    texts: int
    cosine_mean: float
    cosine_min: float
    failing: int  # texts under the pair's min cosine


@dataclass
class WorstText:
    """One of the texts a pair agrees on least."""

    index: int  # its position in the input texts
    tokens: int
    cosine: float
    max_abs_diff: float
    text: str  # the first 160 characters


@dataclass
class NormRange:
    """The norms of one endpoint's vectors."""

    min: float
    mean: float
    max: float


@dataclass
class IdentityEmbedPairRecord:
    """Two embedding endpoints compared: identity's own result for the pair, and its record."""

    a: str
    b: str
    dtype: str  # whose thresholds apply
    thresholds: dict[str, float]  # thresholds.Thresholds without dtype
    texts: int
    dims: dict[str, int]  # endpoint -> dimension
    cosine_min: float
    cosine_p01: float
    cosine_mean: float
    max_abs_diff: float
    max_norm_diff: float
    norms: dict[str, NormRange]  # endpoint -> its norms
    top10_overlap: float | None  # None: too few texts for the neighbour check
    by_token_length: list[TokenLengthBucket]
    worst: list[WorstText]
    verdict: Verdict
    failures: list[str]
    insufficient: list[str]  # checks without enough data to judge
    causes: list[Cause]
    record: str = "identity_embed_pair"


@dataclass
class IdentityRerankPairRecord:
    a: str
    b: str
    dtype: str
    thresholds: dict[str, float]
    max_score_diff: float
    mean_score_diff: float
    kendall_tau_mean: float | None  # None: no query had two candidates to order
    kendall_tau_min: float | None
    verdict: Verdict
    failures: list[str]
    insufficient: list[str]
    causes: list[Cause]
    record: str = "identity_rerank_pair"


@dataclass
class IdentitySummaryRecord:
    source: str  # where the texts came from
    texts: int
    queries: int
    token_lengths: str  # "tokenizer <path>" or "words (no tokenizer)"
    verdict: Verdict  # over every pair, batch invariance and top_n
    total_s: float
    diagnosis_s: float  # probing failed pairs
    suite_s: float  # ragbench's own work: everything but endpoints and diagnosis
    record: str = "identity"


# --- doctor ----------------------------------------------------------------------------------------


@dataclass
class DoctorFinding:
    """One probe's finding: the doctor's own result and its record (tests/results/v2/doctor.jsonl)."""

    hop: str  # tei | litellm | openwebui | lightrag
    ok: bool
    message: str
    fix: str = ""
    record: str = "doctor_finding"


# --- load ------------------------------------------------------------------------------------------


class Op(StrEnum):
    """What a load point sends: texts to embed, or a query and documents to rerank."""

    EMBED = "embed"
    RERANK = "rerank"


class Loop(StrEnum):
    """How a load point sends: fixed virtual users, offered rates, or a burst of texts fired together."""

    CLOSED = "closed"
    OPEN = "open"
    BURST = "burst"


class PointStatus(StrEnum):
    """A judged load point: measured; errors past the limit; nothing measured or succeeded; an open loop whose
    server answered below the rate its schedule offered (docs/load.md)."""

    OK = "ok"
    ERRORS = "errors"
    FAILED = "failed"
    BEHIND = "behind"


@dataclass
class LoadRequests:
    """A load point's requests in its measured window."""

    sent: int
    ok: int
    errors: dict[str, int]  # error class -> requests
    unsent: int = 0  # due in the window but never sent (open loop: the in-flight cap held them)
    validated: int = 0  # answers whose content was checked (shape, dimension)
    #: open loop: sends the schedule set in the measured window (a Poisson or gamma schedule's count varies
    #: about rate x window); left out: not an open loop
    scheduled: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    scheduled_s: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)  # open loop: the window they fill (s)


@dataclass
class Throughput:
    requests_per_s: float  # successful requests over the measured window
    texts_per_s: float
    tokens_per_s: float
    tokens_source: str | None  # x-compute-tokens | the workload's counter | both joined by +; None: no success


@dataclass
class LatencySummary:
    """One latency's HDR histogram summarised, in milliseconds; a quantile resting on fewer values than it needs
    (bench.load.histograms.MIN_SAMPLES: p50 2, p90 10, p99 100, p99.9 1000) is null: insufficient, `count` says
    how many there were (the histogram itself is kept)."""

    p50: float | None
    p90: float | None
    p99: float | None
    p999: float | None
    max: float
    mean: float
    count: int


@dataclass
class Latencies:
    service: LatencySummary | None  # send -> last byte; None: nothing answered
    scheduled: LatencySummary | None = None  # intended send -> last byte (open loop and burst)
    dispatch_delay: LatencySummary | None = None  # intended send -> actual send (open loop and burst)


@dataclass
class ServerTimes:
    """TEI's own split of each answer (its response headers); None where the server sends none."""

    queue: LatencySummary | None = None
    tokenization: LatencySummary | None = None
    inference: LatencySummary | None = None


@dataclass
class Drain:
    """After a load point: how long until the server was idle again (a tiny probe answered within a small multiple
    of its idle latency, measured at the preflight), bounded by the point's --timeout."""

    seconds: float  # from the point's last answer to the idle probe's answer (or to giving up)
    idle: bool  # false: still busy when the time ran out; the next point started on a busy server
    probe_ms: float  # the last probe's latency
    idle_probe_ms: float  # the probe's latency on the idle server (the preflight's)


@dataclass
class ClientView:
    """What the load client spent: saturated when a worker used most of its own ceiling (docs/load.md)."""

    workers: int = 1
    hosts: list[str] = field(default_factory=list)
    cpu_percent: float | None = None
    cpu_per_request_us: float | None = None
    ceiling_requests_per_s: float | None = None
    utilization: float | None = None
    saturated: bool = False
    loop_lag_p99_ms: float | None = None


@dataclass
class PointRepeat:
    """One measurement of a point measured `load --repeat N` times: what resampling needs of it."""

    duration_s: float
    requests: LoadRequests
    throughput: Throughput
    latency_ms: Latencies
    status: PointStatus | None = None


@dataclass
class QuantileIntervals:
    p50: Interval
    p99: Interval


@dataclass
class ThroughputIntervals:
    texts_per_s: Interval
    requests_per_s: Interval


@dataclass
class LatencyIntervals:
    """Each latency's intervals; None where a repeat lacks it (no successful request in it, or not this loop's)."""

    service: QuantileIntervals | None = None
    scheduled: QuantileIntervals | None = None
    dispatch_delay: QuantileIntervals | None = None


@dataclass
class PointIntervals:
    """Over a repeated point's repeats: the mean of each figure and its seeded bootstrap interval."""

    resamples: int  # bootstrap resamples per interval
    confidence: float  # 0.95
    repeats: int
    throughput: ThroughputIntervals
    latency_ms: LatencyIntervals


@dataclass
class LoadPointRecord:
    """One point of a `ragbench load` sweep (docs/load.md defines every field)."""

    endpoint: str
    op: Op
    loop: Loop
    batch: int  # texts per request (rerank: documents per query)
    concurrency: int | None  # closed: virtual users; burst: in-flight cap (0 = none); open: None
    rate: float | None  # open: offered requests/s
    arrival: str | None  # open: constant | poisson | gamma:CV
    #: the measured window: end of warm-up -> the intended end or the last answer/error/timeout, whichever is later
    duration_s: float
    requests: LoadRequests
    throughput: Throughput
    latency_ms: Latencies
    server_ms: ServerTimes
    server_metrics: dict[str, Any] | None  # deltas of TEI's te_* /metrics over the point
    client: ClientView
    max_inflight: int | None = None
    burst: int | None = None  # burst: texts (chunks) in the burst
    length: int | None = None  # --lengths: tokens (or words) per text
    documents: int | None = None  # rerank: candidates per query
    warmup_s: float = 0.0
    histograms: dict[str, str] = field(
        default_factory=dict, metadata=VERBATIM
    )  # quantity -> HDR encoding (exact CDFs, merging)
    error_examples: dict[str, str] = field(default_factory=dict)  # class -> first message seen
    #: ok | errors (error rate past max_error_rate) | failed (nothing measured or succeeded) | behind (open loop:
    #: answered below the scheduled rate); None: written before points were judged
    status: PointStatus | None = None
    problem: str | None = None  # why, when not ok
    max_error_rate: float | None = None  # the limit the point was judged by
    #: `load --repeat N`: each repeat's own figures, in the order measured (the fields above pool them: counts
    #: summed, histograms merged); left out: the point was measured once
    repeats: list[PointRepeat] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: `load --repeat N`: the mean over the repeats and its 95% percentile-bootstrap interval of texts/s, requests/s
    #: and each latency's p50 and p99; left out: the point was measured once
    intervals: PointIntervals | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: HTTP endpoints: the wait after the point until the server was idle again; left out: in-process endpoint
    drain: Drain | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    record: str = "load_point"


# --- ceiling and size ------------------------------------------------------------------------------


@dataclass
class CeilingPoint:
    """`ragbench ceiling`: the reference model's in-process throughput at one (length, batch) on one device/dtype."""

    model: str  # the model folder's name
    model_fingerprint: str
    op: Op  # a CrossEncoder (rerank) reads query + document pairs
    device: str  # cpu | cuda
    device_name: str
    dtype: str  # float32 | float16 | bfloat16
    batch: int
    length: int  # tokens per text asked for (special tokens included)
    tokens_per_text: float  # tokens the model read per input: specials in, truncated at max_seq_length
    max_seq_length: int
    texts: int  # inputs measured (after one whole untimed warm-up call)
    seconds: float
    texts_per_s: float
    tokens_per_s: float
    token_flops: float  # FLOPs per token, from config.json (bench/sizing/ceiling.py)
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
    gpus: list[dict[str, Any]]  # {"gpu", "name", "samples", quantity: {"mean", "max"}} (bench/sizing/telemetry.py)
    record: str = "gpu_telemetry"


@dataclass
class SaturationProbe:
    rate: float  # offered requests/s
    passed: bool  # scheduled p99 under the SLO and errors under the limit
    point: str  # the probe's load point label
    #: it failed and was measured again (the majority of up to three measurements decides); left out: measured once
    remeasured: bool = field(default=False, metadata=WRITTEN_WHEN_SET)
    #: how many times it was measured (2 or 3) when re-measured; left out: measured once
    measurements: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the requests its latency percentile rests on (its last measurement's); left out: files before it was kept
    requests: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the answer's rate measured once more at the end: did it pass again; left out: not measured again
    confirmed: bool | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class SaturationSummary:
    """Where the open-loop search ended (bench/sizing/size.py `saturation_search`)."""

    rate: float | None  # highest passing offered rate (requests/s); None: no probed rate met the SLO
    texts_per_s: float | None  # answered at that rate
    point: str | None  # the probe at that rate
    first_failure: float | None  # lowest failing rate above it; None: the search hit its probe limit first
    probes: list[SaturationProbe] = field(default_factory=list)
    #: why `rate` is only a lower bound (the --max-time budget ran out, a signal stopped the search, no rate
    #: failed); left out: the search ended between a passing and a failing rate
    lower_bound: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: signs that the server's capacity changed between probes; left out: none seen
    capacity_changes: list[str] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)


@dataclass
class SizingLine:
    """One recommended setting and why, naming the points it comes from."""

    setting: str
    value: str
    why: str
    evidence: list[str]  # labels of the load points (and ceiling points) it comes from


@dataclass
class SizingRecord:
    """`ragbench size`: the answer for one endpoint and text length, every line naming its load points."""

    endpoint: str
    op: Op
    length: int | None
    slo_p99_ms: float  # the SLO's latency, ms, at `slo_percentile` (p99 unless that says otherwise)
    max_error_rate: float
    saturation: SaturationSummary | None
    lines: list[SizingLine]
    telemetry: str  # what NVML saw, or why there is no GPU telemetry (said once)
    ceiling: str | None = None  # the ceiling results file the fraction comes from
    record: str = "sizing"
    #: the SLO's percentile (`--slo p95=800ms`); left out: 99
    slo_percentile: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: why this answer is a best-so-far (the budget ran out, a signal stopped the run); left out: the run finished
    stopped: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)


# --- every command ---------------------------------------------------------------------------------


@dataclass
class EndRecord:
    status: str  # complete | interrupted | failed
    finished: str
    error: str | None = None
    record: str = "end"


RECORD_TYPES: dict[str, type] = {
    cls.record: cls
    for cls in (
        RunHeader,
        EndRecord,
        TargetRecord,
        QueryRecord,
        MetricRecord,
        ComparisonRecord,  # quality
        IdentityEndpointRecord,
        IdentityEmbedPairRecord,
        IdentityRerankPairRecord,
        IdentitySummaryRecord,  # identity
        DoctorFinding,  # doctor
        LoadPointRecord,  # load
        CeilingPoint,
        GpuTelemetryRecord,
        SizingRecord,  # ceiling, size
    )
}
