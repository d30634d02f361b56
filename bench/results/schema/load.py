"""The results file's load records: one `load_point` per sweep point, with its nested blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from bench.core.machine import MachineView  # the host during a point's window: load, busy and stolen CPU
from bench.core.resample import Interval  # a mean and its interval: a block of load_point's intervals
from bench.core.secrets import VERBATIM
from bench.results.schema.conventions import WRITTEN_WHEN_SET


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


class InterleavedVerdict(StrEnum):
    """`load --interleave`'s verdict on a point (compare's rule on the gated figures' paired intervals): pass,
    fail, inconclusive; `not gated`: no limit given; `too busy`: undecided with too many rounds the machine's
    (bench/gate/anytime.py); `cannot judge`: a gated figure no round pair measured, or a record whose figures
    are not rates and latencies (fewer than 2 rounds, a figure not finite or below 0): neither a pass nor a
    figure (written from issue 50 on; every earlier record holds one of the others)."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    NOT_GATED = "not gated"
    TOO_BUSY = "too busy"
    CANNOT_JUDGE = "cannot judge"


class PairedFigureName(StrEnum):
    """The figures `load --interleave` pairs: texts/s (gated by --min-throughput-ratio), p50 (reported) and p99
    (gated by --max-p99-increase)."""

    TEXTS_PER_S = "texts_per_s"
    P50 = "p50"
    P99 = "p99"


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
    def length_text(self) -> str | None:
        """`128`, or the distribution's `from:DATASET`; None: the texts as they were."""
        if self.length_distribution is not None:
            return self.length_distribution.source
        return str(self.length) if self.length else None

    @property
    def size_text(self) -> str:
        """The batch (rerank: documents per query), or the documents distribution's spec."""
        return self.documents_distribution.spec if self.documents_distribution is not None else str(self.batch)


@dataclass
class InterleavedRound:
    """One round of `load --interleave`: the point measured on the baseline and the candidate back to back (in
    the order `first` says), each side's figures and the candidate ÷ baseline ratios; a figure a window lacks
    (no success, or too few answers for the quantile) is null, and so is its ratio."""

    round: int  # 1, 2, ... in the order measured
    first: str  # the endpoint measured first in this round (randomised per round, seeded by --seed)
    baseline_texts_per_s: float
    current_texts_per_s: float
    baseline_p50_ms: float | None
    current_p50_ms: float | None
    baseline_p99_ms: float | None
    current_p99_ms: float | None
    texts_per_s_ratio: float | None  # current ÷ baseline
    p50_ratio: float | None
    p99_ratio: float | None
    #: `--slice`: each side's slices' own texts/s in the order measured (null: a slice with no measured time); the
    #: k-th of each side ran back to back (X Y | Y X), one pair of texts/s's paired interval; left out: whole windows
    baseline_slices_texts_per_s: list[float | None] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    current_slices_texts_per_s: list[float | None] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the client's event-loop lag p99 (ms) in each side's window, and the host during the round (of the two
    #: windows, the busier); `too_busy`: why the round's windows were the machine's, not the endpoints' (the lag
    #: past 10% of the round's median request, bench/core/machine.py): such a round is left out of the pairs
    baseline_loop_lag_p99_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    current_loop_lag_p99_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    machine: MachineView | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    too_busy: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: B answered, but fewer times than a p99 needs (100): its largest answer (ms), what its p99 is taken as at
    #: least where A has a p99 (a B too slow to answer 100 times is slow, not ungated); left out: B has a p99, or
    #: no answer
    current_p99_at_least_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class PairedFigure:
    """One figure's paired ratio over the rounds (bench/gate/paired.py): the Hodges-Lehmann estimate of the rounds'
    ratios with the exact 95% Wilcoxon signed-rank interval (Student t below 6 rounds), its robust noise paired
    and unpaired, and the smallest step each sees."""

    figure: PairedFigureName  # texts_per_s | p50 | p99
    ratio: Interval  # current ÷ baseline: exp(Hodges-Lehmann log ratio), 95% signed-rank interval (t below 6 rounds)
    rounds: int  # rounds with the figure on both sides
    paired_noise: float  # 1.4826 × MAD of log(current / baseline) over the rounds (a robust sd)
    unpaired_noise: float  # sqrt(s(log baseline)² + s(log current)²), s = 1.4826 × MAD: the same windows, unpaired
    detectable: float  # the smallest regression ratio seen at 80% power, one-sided 2.5% false alarms, paired
    detectable_unpaired: float  # the same from the unpaired noise of the same windows
    limit: float | None  # compare's limit: --min-throughput-ratio, 1 + --max-p99-increase; None: not gated
    verdict: InterleavedVerdict | None  # pass | fail | inconclusive; None: not gated
    rounds_needed: int | None  # rounds to see the limit's step at 80% power, paired; None: no limit or > 1000
    rounds_needed_unpaired: int | None  # the same, unpaired
    #: the pairs judged when finer than rounds: texts/s of a run in slices, each round's k-th slice of A with B's
    #: k-th (back to back); the noise and smallest steps are per pair; left out: one pair per round
    pairs: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: texts/s: the rounds in which B answered nothing while A answered (it stopped answering): their ratio is 0,
    #: no interval of logs is said, and a limit fails; left out: none
    silent_rounds: list[int] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: p99: the rounds whose B p99 is its largest answer (`current_p99_at_least_ms`): a fail stands, a pass is
    #: inconclusive (the ratio is at least what is said); left out: none
    at_least_rounds: list[int] | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class InterleavedRoundRecord:
    """`load --interleave`: one round of a point, written as it finishes (before the next round starts), so a run
    killed mid-point keeps the rounds it measured; the point's `interleaved` record, written once its rounds end,
    holds them all and is the one read where it is there (bench/load/interleave_record.py)."""

    baseline: str
    current: str
    point: str
    latency: str  # service (closed loop) or scheduled (open loop): the latency whose p50 and p99 are paired
    round: InterleavedRound
    record: str = "interleaved_round"


@dataclass
class InterleavedRecord:
    """`load --interleave`: one point measured in alternating windows on two endpoints, paired round by round
    (docs/load.md); the windows themselves are the two endpoints' `load_point` records, one repeat per round."""

    baseline: str  # endpoint A (the first -e)
    current: str  # endpoint B (the second -e)
    point: str  # the point's label, e.g. `closed batch 1 conc 1`
    latency: str  # the latency whose p50 and p99 are paired: service (closed loop) or scheduled (open loop)
    rounds: list[InterleavedRound]
    figures: list[PairedFigure]
    #: pass | fail | inconclusive by compare's rule on the gated figures; `not gated`: no limit was given; `too
    #: busy`: undecided with too many rounds left out as the machine's (bench/gate/anytime.py); `cannot judge`:
    #: a gated figure no pair of rounds measured
    verdict: InterleavedVerdict
    #: figures a limit gates but fewer than two rounds have on both sides (a p99 of too few answers): not judged
    not_judged: list[str] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: `--max-time`: the job's budget (s); its rounds went on until the interval cleared the limit or the budget
    #: was spent, so every interval is the anytime-valid one (bench/gate/anytime.py); left out: a fixed --rounds
    max_time_s: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: `--max-time`: why the rounds stopped (decided, the budget spent, stopped)
    stopped: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    confidence: float = 0.95
    false_alarm: float = 0.025  # one-sided: a figure at its limit fails this often
    power: float = 0.8
    record: str = "interleaved"
