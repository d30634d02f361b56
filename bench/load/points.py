"""The points of a load sweep: what each one sends and how, one way to name a point, and one way to judge it.

`SweepConfig.points()` expands the command's lists (lengths x sizes x concurrencies | rates) into
`PointConfig`s; `PointKey` is what makes two points the same measurement and `point_label` its one name (a
PointConfig or a LoadPointRecord; with the endpoint where the reader does not know it already) in progress
bars, the summary table, the report, sizing's evidence and compare; `error_rate` and `judge` say whether a
point measured anything and how many of its requests failed, for load, size, run and compare alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from bench.core.machine import too_busy
from bench.core.values import rate_text
from bench.load.histograms import decode, recorded
from bench.load.lengths import DocumentsDraw, LengthsFrom
from bench.load.quantities import LatencyQuantity, latency_block
from bench.load.schedule import Arrival
from bench.results.schema import LatencySummary, LoadPointRecord, LoadRequests, Loop, Op, PointStatus

MAX_ERROR_RATE = 0.001  # load's and size's default: a point with more errors than this is marked
OK, ERRORS, FAILED, BEHIND = PointStatus.OK, PointStatus.ERRORS, PointStatus.FAILED, PointStatus.BEHIND
# An open loop is `behind` when its requests finished at a rate below this share of the rate its schedule offered
# (scheduled sends over the intended window): the window stretched by more than a ninth waiting for answers. The
# schedule's own count is the yardstick, not rate x window: a Poisson schedule of 2/s may set 10 sends in 10 s.
BEHIND_SHARE = 0.9


@dataclass(frozen=True)
class PointConfig:
    op: Op
    loop: Loop = Loop.CLOSED
    batch: int = 1  # texts per request (rerank: documents per query)
    concurrency: int | None = None  # closed users; burst in-flight cap (0 = none)
    rate: float | None = None
    arrival: Arrival | None = None
    max_inflight: int | None = None
    burst: int | None = None  # texts in the burst
    length: int | LengthsFrom | None = None  # tokens (words) per text, or drawn from a dataset's; None: as they are
    documents_draw: DocumentsDraw | None = None  # rerank: candidates drawn per request (`batch` is its mean)
    duration_s: float | None = 10.0
    requests: int | None = None
    warmup_s: float = 2.0
    workers: int = 1
    timeout_s: float = 30.0
    seed: int = 0
    max_error_rate: float = MAX_ERROR_RATE  # above it the point is marked `errors`
    log_requests: bool = False  # workers keep one row per measured request (load --requests-csv)

    @property
    def length_text(self) -> str | None:
        return None if self.length is None else str(self.length)

    @property
    def size_text(self) -> str:
        return str(self.documents_draw) if self.documents_draw is not None else str(self.batch)


@dataclass
class SweepConfig:
    """The lists a sweep runs over; everything else every point shares comes from `base`."""

    base: PointConfig  # op, timing, workers, arrival, max_inflight, burst, seed
    batches: list[int] = field(default_factory=lambda: [1])
    concurrencies: list[int] = field(default_factory=lambda: [1])
    rates: list[float] = field(default_factory=list)
    lengths: list[int | LengthsFrom | None] = field(default_factory=lambda: [None])
    documents: list[int | DocumentsDraw] = field(default_factory=lambda: [10])
    repeat: int = 1  # each point measured this many times, interleaved, pooled into one record (load --repeat)

    def points(self) -> list[PointConfig]:
        base = self.base
        sizes: list[int | DocumentsDraw] = [*self.documents] if base.op == Op.RERANK else [*self.batches]
        out: list[PointConfig] = []
        for length in self.lengths:
            for size in sizes:
                shaped = sized_point(replace(base, length=length), size)
                if base.burst is not None:
                    out += [replace(shaped, loop=Loop.BURST, concurrency=c) for c in self.concurrencies]
                elif self.rates:  # each rate its own seed: poisson/gamma gaps differ between points, reruns repeat them
                    out += [
                        replace(shaped, loop=Loop.OPEN, rate=r, seed=base.seed + i) for i, r in enumerate(self.rates)
                    ]
                else:
                    out += [replace(shaped, loop=Loop.CLOSED, concurrency=c) for c in self.concurrencies]
        return out


def sized_point(point: PointConfig, size: int | DocumentsDraw) -> PointConfig:
    """The point with `size` texts a request, or a documents draw (its rounded mean as the batch)."""
    if isinstance(size, int):
        return replace(point, batch=size)
    return replace(point, batch=size.typical, documents_draw=size)


class PointSettings(Protocol):
    """What names a point: a PointConfig before it runs, a LoadPointRecord after."""

    @property
    def op(self) -> Op: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def batch(self) -> int: ...
    @property
    def concurrency(self) -> int | None: ...
    @property
    def rate(self) -> float | None: ...
    @property
    def max_inflight(self) -> int | None: ...
    @property
    def burst(self) -> int | None: ...
    @property
    def length_text(self) -> str | None: ...  # `128`, `from:builtin:numpy-docs`; None: no length set
    @property
    def size_text(self) -> str: ...  # the batch, or a documents distribution (`10..100`, `poisson:40`)
    @property
    def arrival(self) -> object: ...


def point_label(p: PointSettings, endpoint: str | None = None) -> str:
    """`closed batch 8 conc 4`, `open batch 1 400/s poisson cap 16`, `burst 1000 texts batch 32 conc 4` (+ len N);
    with `endpoint`, led by it and the op (`tei embed closed batch 8 conc 4`): a point among other endpoints'."""
    size = f"docs {p.size_text}" if p.op == Op.RERANK else f"batch {p.size_text}"
    length = f" len {p.length_text}" if p.length_text else ""
    if p.loop == Loop.CLOSED:
        label = f"closed {size} conc {p.concurrency}{length}"
    elif p.loop == Loop.OPEN:
        cap = f" cap {p.max_inflight}" if p.max_inflight else ""
        rate = rate_text(p.rate) if p.rate is not None else "?"
        label = f"open {size} {rate}/s {p.arrival}{cap}{length}"
    else:
        label = f"burst {p.burst} texts {size} conc {p.concurrency or 'unlimited'}{length}"
    return f"{endpoint} {p.op} {label}" if endpoint is not None else label


@dataclass(frozen=True)
class PointKey:
    """What makes two sweep points the same measurement: the endpoint (by its current name) and every setting."""

    endpoint: str
    op: Op
    loop: Loop
    batch: int
    concurrency: int | None
    rate: float | None
    arrival: str | None
    max_inflight: int | None
    burst: int | None
    length: int | None
    documents: int | None
    length_from: str | None = None  # `--lengths from:DATASET`, as the record's length distribution says
    documents_from: str | None = None  # a documents distribution, as the record says

    @classmethod
    def of(cls, point: LoadPointRecord, endpoint: str | None = None) -> PointKey:
        return cls(
            endpoint if endpoint is not None else point.endpoint,
            point.op,
            point.loop,
            point.batch,
            point.concurrency,
            point.rate,
            point.arrival,
            point.max_inflight,
            point.burst,
            point.length,
            point.documents,
            point.length_distribution.source if point.length_distribution else None,
            point.documents_distribution.spec if point.documents_distribution else None,
        )

    @property
    def length_text(self) -> str | None:
        return self.length_from or (str(self.length) if self.length else None)

    @property
    def size_text(self) -> str:
        return self.documents_from or str(self.batch)

    @property
    def label(self) -> str:
        return point_label(self, self.endpoint)


def error_rate(requests: LoadRequests) -> float:
    """(errors + unsent) / (sent + unsent) of a point's `requests` block: a request never sent by the end
    failed its user as surely; 1.0 when nothing was measured."""
    total = requests.sent + requests.unsent
    return (sum(requests.errors.values()) + requests.unsent) / total if total else 1.0


@dataclass(frozen=True)
class Window:
    """What `judge` needs of a point's timing besides its counts: the intended measured window (s; None for
    --requests and bursts), the window as measured (to the last answer), and the longest a request sent before
    the window took (warm-up; None when none answered)."""

    intended_s: float | None = None
    measured_s: float | None = None
    warmup_longest_s: float | None = None


def judge(requests: LoadRequests, max_error_rate: float, window: Window = Window()) -> tuple[PointStatus, str | None]:
    """A point's status and, unless `ok`, the one line that says why: `failed` when nothing was measured or
    nothing succeeded (a failed measurement: the command exits 3), `errors` when its error rate is past the limit,
    `behind` when an open loop's requests finished below BEHIND_SHARE of the rate its schedule offered."""
    errors = ", ".join(f"{cls} {n}" for cls, n in sorted(requests.errors.items(), key=lambda kv: -kv[1]))
    unsent = requests.unsent
    if requests.sent == 0 and not unsent:
        return PointStatus.FAILED, _nothing_measured(window)
    if requests.ok == 0:
        return PointStatus.FAILED, f"no request succeeded: {requests.sent} sent ({errors or 'no answer'})" + (
            f", {unsent} never sent" if unsent else ""
        )
    rate = error_rate(requests)
    if rate > max_error_rate:
        return PointStatus.ERRORS, f"error rate {rate:.2%} > {max_error_rate:.2%} ({errors}" + (
            f", unsent {unsent}" if unsent else ""
        ) + ")"
    scheduled, intended, measured = requests.scheduled, window.intended_s, window.measured_s
    if scheduled and intended and measured:
        offered, achieved = scheduled / intended, requests.sent / measured
        if achieved < BEHIND_SHARE * offered:
            return PointStatus.BEHIND, (
                f"behind its schedule: {scheduled} sends scheduled in {intended:g} s ({offered:.1f}/s), "
                f"{requests.sent} finished over {measured:.1f} s ({achieved:.1f}/s): the server did not keep up"
            )
    return PointStatus.OK, None


def _nothing_measured(window: Window) -> str:
    """Why no request was sent in the window: a warm-up request that outlasted it (and the --duration that holds
    two of them), else a server that answered nothing before the window ended."""
    took, intended = window.warmup_longest_s, window.intended_s
    if took is not None and intended is not None and took > intended:
        return (
            f"nothing measured: a request took {took:.1f} s, longer than the {intended:g} s window; "
            f"use --duration >= {math.ceil(2 * took):d}s"
        )
    if took is not None:
        return (
            f"nothing measured: no request was sent in the measured window (the slowest warm-up answer: {took:.1f} s)"
        )
    return "nothing measured: no request was sent in the measured window (no answer came during the warm-up)"


def carried_rate(requests: LoadRequests) -> float | None:
    """The requests/s an open loop's window carried: the sends intended in it over its length (the schedule's
    window, cut where the pool's stop time cut it); None: not an open loop. A verdict at a rate is a verdict at
    this rate: the label is what was asked, this is what the endpoint was given (sends left late or held by the
    in-flight cap and never sent do not count)."""
    if requests.scheduled_s is None or requests.scheduled_s <= 0:
        return None
    return requests.sent / requests.scheduled_s


def machine_too_busy(record: LoadPointRecord, scale_ms: float) -> str | None:
    """Why the point's window is the machine's and not the endpoint's, for a verdict on the scale `scale_ms` (an
    SLO, a median request): its client's loop lag past what that scale tolerates (bench/core/machine.py), said
    with the host's figures; None: the client carried the window."""
    return too_busy(record.client.loop_lag_p99_ms, scale_ms, record.machine)


def point_too_busy(record: LoadPointRecord) -> str | None:
    """`machine_too_busy` on the point's own scale, its median answer (scheduled where sends are, else service):
    what `load`, `compare` and `history` ask of a point that has no SLO; None: carried, or nothing answered."""
    block = record.latency_ms.scheduled or record.latency_ms.service
    if block is None or block.p50 is None:
        return None
    return machine_too_busy(record, block.p50)


# Read from a point record (a LoadPointRecord): sizing and the reports use these.
_SUMMARY_FIELDS: dict[float, Callable[[LatencySummary], float | None]] = {
    50.0: lambda block: block.p50,
    90.0: lambda block: block.p90,
    99.0: lambda block: block.p99,
    99.9: lambda block: block.p999,
}


def recorded_us(point: LoadPointRecord, quantity: LatencyQuantity | str) -> list[tuple[int, int]] | None:
    """(value µs, count) of every recorded bucket of the point's `quantity` histogram, lowest first; None: none kept."""
    encoded = point.histograms.get(quantity)
    return recorded(decode(encoded)) if encoded else None


def percentile_ms(point: LoadPointRecord, quantity: LatencyQuantity | str, percentile: float) -> float | None:
    """The point's `quantity` latency at `percentile`: its summary's (p50, p90, p99, p99.9: as every command reads
    them), else its histogram's order statistic of rank ⌈q·n⌉ — also where the summary left it null for resting
    on too few answers (histograms.MIN_SAMPLES): a verdict that reads it says how many it rests on; None: neither
    has it."""
    block = latency_block(point.latency_ms, quantity)
    summarised = _SUMMARY_FIELDS[percentile](block) if block is not None and percentile in _SUMMARY_FIELDS else None
    if summarised is not None:
        return float(summarised)
    buckets = recorded_us(point, quantity)
    if not buckets:
        return None
    n = sum(count for _, count in buckets)
    return order_statistic_ms(buckets, max(1, math.ceil(percentile / 100.0 * n)))


def order_statistic_ms(buckets: list[tuple[int, int]], rank: int) -> float:
    """The `rank`-th smallest value (1-based), in ms."""
    seen = 0
    for value, count in buckets:
        seen += count
        if seen >= rank:
            return value / 1000.0
    return buckets[-1][0] / 1000.0


def texts_per_s(point: LoadPointRecord) -> float:
    return float(point.throughput.texts_per_s or 0.0)
