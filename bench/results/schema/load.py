"""The results file's load records: one `load_point` per sweep point, with its nested blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from bench.core.machine import MachineView  # the host during a point's window: load, busy and stolen CPU
from bench.core.resample import Interval  # a mean and its interval: a block of load_point's intervals
from bench.core.secrets import VERBATIM
from bench.results.schema.conventions import WRITTEN_WHEN_SET

# the interleaved records' enums, imported from here before they had their own module
from bench.results.schema.interleave import InterleavedVerdict as InterleavedVerdict
from bench.results.schema.interleave import PairedFigureName as PairedFigureName
from bench.results.schema.kinds import ErrorCount


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
class Spread:
    """Quantiles of a set of whole numbers (text lengths, documents per call): observed values, each quantile
    the smallest value with at least that share of the set at or below it."""

    n: int  # how many values
    mean: float
    min: int
    p10: int
    p50: int
    p90: int
    p99: int
    max: int


@dataclass
class LengthDistribution:
    """`--lengths from:DATASET`: each text cut to a length drawn (seeded) from the dataset's own corpus texts'
    lengths, counted by `unit`; `corpus` is that distribution, `sent` the lengths of the texts cut from it."""

    source: str  # from:DATASET, as given
    unit: str  # tokenizer (--tokenizer's tokens) | words (white-space separated, without a tokenizer)
    seed: int  # the run's --seed: the same draw every run
    corpus: Spread  # the dataset's corpus texts' lengths (a seeded sample of 20,000 of a larger corpus)
    sent: Spread  # the texts cut for the point (its requests cycle through them all), counted the same way
    clipped: int  # draws longer than the running corpus allows (or 32,768), sent at that length


@dataclass
class DocumentsDistribution:
    """Rerank `--documents A..B` or `poisson:M`: each request's documents drawn (seeded), `sent` what was drawn;
    the point's `batch` and `documents` hold the rounded mean of the distribution."""

    spec: str  # 10..100 (uniform, inclusive) | poisson:40 (at least 1)
    seed: int  # the run's --seed
    sent: Spread  # documents per request over the point's distinct requests


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


class MetricHistogram(TypedDict):
    """A TEI histogram's increase over a point (seconds, as TEI exports them)."""

    count: float
    sum: float
    mean: float | None  # None: nothing counted
    buckets: dict[str, float]  # upper bound `le` -> observations


class ServerMetrics(TypedDict):
    """TEI's te_* /metrics over a point (bench/load/server_view.py), keyed `name{labels}` as TEI names them: a wire
    block kept as the JSON object it is written as (the schema describes it as an object of any keys)."""

    counters: dict[str, float]  # increase
    histograms: dict[str, MetricHistogram]
    gauges: dict[str, float]  # the value after the point


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
    server_metrics: ServerMetrics | None  # deltas of TEI's te_* /metrics over the point
    client: ClientView
    max_inflight: int | None = None
    burst: int | None = None  # burst: texts (chunks) in the burst
    length: int | None = None  # --lengths: tokens (or words) per text
    documents: int | None = None  # rerank: candidates per query
    #: `--lengths from:DATASET`: the length distribution the texts were cut to; left out: fixed or no length
    length_distribution: LengthDistribution | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: rerank `--documents A..B` / `poisson:M`: the documents per request drawn; left out: a fixed count
    documents_distribution: DocumentsDistribution | None = field(default=None, metadata=WRITTEN_WHEN_SET)
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
    #: the host during the point (warm-up and window): its load average at both ends, the CPUs' busy and stolen
    #: share; with `client.loop_lag_p99_ms`, whether the client could carry the window (bench/core/machine.py);
    #: left out: written before it was recorded
    machine: MachineView | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    record: str = "load_point"

    @property
    def error_counts(self) -> list[ErrorCount]:
        """`requests.errors` and `error_examples` as one typed record per error class."""
        return ErrorCount.of(self.requests.errors, self.error_examples)

    @property
    def length_text(self) -> str | None:
        """`128`, or the distribution's `from:DATASET`; None: the texts as they were."""
        if self.length_distribution is not None:
            return self.length_distribution.source
        return str(self.length) if self.length else None

    @property
    def size_text(self) -> str:
        """The batch (rerank: documents per query), or the documents distribution's spec."""
        return self.documents_distribution.spec if self.documents_distribution is not None else str(self.batch)
