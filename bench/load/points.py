"""The points of a load sweep: what each one sends and how, one way to name a point, and one way to judge it.

`SweepConfig.points()` expands the command's lists (lengths x sizes x concurrencies | rates) into
`PointConfig`s; `point_label` names a point (a PointConfig or a LoadPointRecord) in progress bars, the
summary table and the report; `error_rate` and `judge` say whether a point measured anything and how
many of its requests failed, for load, size, run and compare alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bench.load.schedule import Arrival
from bench.results.schema import LoadPointRecord

MAX_ERROR_RATE = 0.001  # load's and size's default: a point with more errors than this is marked
OK, ERRORS, FAILED = (
    "ok",
    "errors",
    "failed",
)  # a point's status: measured; errors past the limit; nothing measured or succeeded


@dataclass(frozen=True)
class PointConfig:
    op: str  # embed | rerank
    loop: str = "closed"  # closed | open | burst
    batch: int = 1  # texts per request (rerank: documents per query)
    concurrency: int | None = None  # closed users; burst in-flight cap (0 = none)
    rate: float | None = None
    arrival: Arrival | None = None
    max_inflight: int | None = None
    burst: int | None = None  # texts in the burst
    length: int | None = None
    duration_s: float | None = 10.0
    requests: int | None = None
    warmup_s: float = 2.0
    workers: int = 1
    timeout_s: float = 30.0
    seed: int = 0
    max_error_rate: float = MAX_ERROR_RATE  # above it the point is marked `errors`


@dataclass
class SweepConfig:
    """The lists a sweep runs over; everything else every point shares comes from `base`."""

    base: PointConfig  # op, timing, workers, arrival, max_inflight, burst, seed
    batches: list[int] = field(default_factory=lambda: [1])
    concurrencies: list[int] = field(default_factory=lambda: [1])
    rates: list[float] = field(default_factory=list)
    lengths: list[int | None] = field(default_factory=lambda: [None])
    documents: list[int] = field(default_factory=lambda: [10])
    repeat: int = 1  # each point measured this many times, interleaved, pooled into one record (load --repeat)

    def points(self) -> list[PointConfig]:
        base = self.base
        sizes = self.documents if base.op == "rerank" else self.batches
        out: list[PointConfig] = []
        for length in self.lengths:
            for size in sizes:
                if base.burst is not None:
                    out += [
                        replace(base, loop="burst", batch=size, concurrency=c, length=length)
                        for c in self.concurrencies
                    ]
                elif self.rates:  # each rate its own seed: poisson/gamma gaps differ between points, reruns repeat them
                    out += [
                        replace(base, loop="open", batch=size, rate=r, length=length, seed=base.seed + i)
                        for i, r in enumerate(self.rates)
                    ]
                else:
                    out += [
                        replace(base, loop="closed", batch=size, concurrency=c, length=length)
                        for c in self.concurrencies
                    ]
        return out


def point_label(p) -> str:
    """`closed batch 8 conc 4`, `open batch 1 400/s poisson cap 16`, `burst 1000 texts batch 32 conc 4` (+ len N)."""
    size = f"docs {p.batch}" if p.op == "rerank" else f"batch {p.batch}"
    length = f" len {p.length}" if p.length else ""
    if p.loop == "closed":
        return f"closed {size} conc {p.concurrency}{length}"
    if p.loop == "open":
        cap = f" cap {p.max_inflight}" if p.max_inflight else ""
        return f"open {size} {p.rate:g}/s {p.arrival}{cap}{length}"
    return f"burst {p.burst} texts {size} conc {p.concurrency or 'unlimited'}{length}"


def error_rate(requests: dict[str, Any]) -> float:
    """(errors + unsent) / (sent + unsent) of a point's `requests` block: a request never sent by the end
    failed its user as surely; 1.0 when nothing was measured."""
    unsent = requests.get("unsent") or 0
    total = requests["sent"] + unsent
    return (sum(requests["errors"].values()) + unsent) / total if total else 1.0


def judge(requests: dict[str, Any], max_error_rate: float) -> tuple[str, str | None]:
    """A point's status and, unless `ok`, the one line that says why: `failed` when nothing was measured or
    nothing succeeded (a failed measurement: the command exits 3), `errors` when its error rate is past the limit."""
    errors = ", ".join(f"{cls} {n}" for cls, n in sorted(requests["errors"].items(), key=lambda kv: -kv[1]))
    unsent = requests.get("unsent") or 0
    if requests["sent"] == 0 and not unsent:
        return FAILED, (
            "nothing measured: no request was sent in the measured window (the server may have hung during the warm-up)"
        )
    if requests["ok"] == 0:
        return FAILED, f"no request succeeded: {requests['sent']} sent ({errors or 'no answer'})" + (
            f", {unsent} never sent" if unsent else ""
        )
    rate = error_rate(requests)
    if rate > max_error_rate:
        return ERRORS, f"error rate {rate:.2%} > {max_error_rate:.2%} ({errors}" + (
            f", unsent {unsent}" if unsent else ""
        ) + ")"
    return OK, None


# Read from a point record (a LoadPointRecord): sizing and the reports use these.
def p99_ms(point: LoadPointRecord, quantity: str) -> float | None:
    block = point.latency_ms.get(quantity)
    return block["p99"] if block else None


def texts_per_s(point: LoadPointRecord) -> float:
    return float(point.throughput.get("texts_per_s") or 0.0)
