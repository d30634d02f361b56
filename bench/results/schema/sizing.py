"""The results file's ceiling and size records: in-process ceiling points, GPU telemetry, the sizing answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, NotRequired, TypedDict

from bench.core.machine import MachineView
from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.load import Op


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


# The NVML quantities a size run samples per GPU (bench/sizing/telemetry.py QUANTITIES).
GpuQuantity = Literal["utilization_pct", "memory_used_mib", "power_w", "sm_clock_mhz"]


class MeanMax(TypedDict):
    mean: float
    max: float


class GpuWindowBlock(TypedDict):
    """One GPU over a load point's window: its index, name, samples taken, and each quantity's mean and max
    (absent where no sample fell in the window)."""

    gpu: int
    name: str
    samples: int
    utilization_pct: NotRequired[MeanMax]
    memory_used_mib: NotRequired[MeanMax]
    power_w: NotRequired[MeanMax]
    sm_clock_mhz: NotRequired[MeanMax]


@dataclass
class GpuTelemetryRecord:
    """`ragbench size`: NVML samples over one load point's measured window, mean and max per GPU."""

    endpoint: str
    point: str  # the load point's label
    start: float  # time.monotonic() seconds: the window the samples fall in
    end: float
    gpus: list[GpuWindowBlock]  # {"gpu", "name", "samples", quantity: {"mean", "max"}} (bench/sizing/telemetry.py)
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
    #: why it failed although its percentile met the SLO: its queue was still growing, or the percentile's upper end
    #: over the requests' independent stretches of queue was over the SLO; left out: a steady verdict
    unsteady: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: why it passed but does not stand: the --max-time budget cut its warm-up or window shorter than a steady
    #: verdict needs, so it is neither a pass nor a failure; left out: a whole window
    unconfirmed: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: requests/s its (last) window carried: sent over the scheduled window; a verdict more than 5% under `rate` is
    #: judged at this rate; left out: files before it was kept
    carried_rate: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: why it is neither a pass nor a failure: its percentile's 95% interval straddles the SLO (extended while the
    #: budget allowed); left out: a decided verdict
    inconclusive: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: "this machine was too busy (figure)": the client could not carry its window (re-measured); never the
    #: endpoint's failure nor a pass; left out: the client carried it
    too_busy: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the search's restarts before it (a capacity that collapsed restarts the search); left out: 0
    epoch: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class SaturationSummary:
    """Where the open-loop search ended (bench/sizing/search.py `saturation_search`)."""

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
    #: rates between `rate` and `first_failure` that passed on a window the budget cut short (unconfirmed: the
    #: saturation rate may lie above or below them); left out: none
    unconfirmed: list[float] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: rates between `rate` and `first_failure` whose interval straddled the SLO (inconclusive), and whose window the
    #: machine could not carry (too busy): neither a pass nor a failure; left out: none
    inconclusive: list[float] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    too_busy: list[float] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: what a tighter answer needs (requests and seconds a probe, from the measured service times' queue), when the
    #: answer is an interval wider than --tolerance or no rate passed; left out: not needed
    tighter: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)


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
    #: `--lengths from:DATASET`: the texts' lengths were drawn from DATASET's (its load points' length_distribution
    #: says how); left out: a fixed length or none
    length_from: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)

    @property
    def length_text(self) -> str:
        """`128`, `from:DATASET`, or `None` (the texts as they were)."""
        return self.length_from or str(self.length)


class SpeedOutcome(StrEnum):
    """What one `size --trace` replay says of the endpoint at its speed."""

    PASS = "pass"  # every route under the SLO, within the error limit, steady
    FAIL = "fail"  # a route past the SLO or the error limit, or its queue growing
    TOO_BUSY = "too busy"  # the client could not carry the window: the machine's, neither a pass nor a failure
    CUT = "cut short"  # the --max-time budget or a signal ended the replay: no verdict


@dataclass
class TraceSpeedProbe:
    """`size --trace`: one replay of the trace at `speed`, and what the client and the host did meanwhile."""

    speed: float
    outcome: SpeedOutcome
    reason: str  # why it failed or was the machine's ("" for a pass): the route and the figure
    calls: int  # calls the replay scheduled (every route)
    window_s: float  # the replay's scheduled span: first to last intended send
    seconds: float  # wall time the probe took (workers started, replay, answers awaited)
    offered_per_s: float  # calls/s the schedule asked for (calls over the window)
    #: calls/s the client sent: calls sent over first intended send to last actual send; None: nothing sent
    carried_per_s: float | None
    #: the slowest route's SLO percentile (scheduled latency, ms); None: no call answered
    percentile_ms: float | None
    #: sends later than the SLO's lag tolerance (bench/core/machine.py lag_limit_ms) after their intended time
    late_sends: int
    loop_lag_p99_ms: float | None  # the client's event-loop lag p99 over the replay; None: not measured
    machine: MachineView | None = None  # the host during the replay


@dataclass
class TraceSizeRecord:
    """`size --trace`: the largest speed-up of a recorded trace that meets the SLO on every route, and replicas."""

    trace: str
    slo_ms: float
    slo_percentile: float
    max_error_rate: float
    #: the highest standing pass (× the recorded rate); None: no probed speed passed
    max_speed: float | None
    failed_speed: float | None  # the lowest standing failure above it; None: none failed
    failed_because: str | None
    target_speed: float  # the growth the replicas are for (--target-speed; 1: the traffic as recorded)
    replicas: int | None  # ceil(target / max_speed); None: no speed passed
    probes: list[TraceSpeedProbe] = field(default_factory=list)
    record: str = "trace_size"
    #: why the answer is a best-so-far (the budget ran out, a signal stopped the run); left out: the search finished
    stopped: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: "this machine was too busy (...)": the search ended on replays the client could not carry; left out: none
    too_busy: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    max_time_s: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)  # --max-time; left out: none given
