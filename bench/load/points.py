"""The points of a load sweep: what each one sends and how, and one way to name a point.

`SweepConfig.points()` expands the command's lists (lengths x sizes x concurrencies | rates) into
`PointConfig`s; `point_label` names a point (a PointConfig or a LoadPointRecord) in progress bars, the
summary table and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bench.load.schedule import Arrival


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


@dataclass
class SweepConfig:
    """The lists a sweep runs over; everything else every point shares comes from `base`."""

    base: PointConfig  # op, timing, workers, arrival, max_inflight, burst, seed
    batches: list[int] = field(default_factory=lambda: [1])
    concurrencies: list[int] = field(default_factory=lambda: [1])
    rates: list[float] = field(default_factory=list)
    lengths: list[int | None] = field(default_factory=lambda: [None])
    documents: list[int] = field(default_factory=lambda: [10])

    def points(self) -> list[PointConfig]:
        base = self.base
        sizes = self.documents if base.op == "rerank" else self.batches
        out: list[PointConfig] = []
        for length in self.lengths:
            for size in sizes:
                if base.burst is not None:
                    out += [replace(base, loop="burst", batch=size, concurrency=c, length=length) for c in self.concurrencies]
                elif self.rates:  # each rate its own seed: poisson/gamma gaps differ between points, reruns repeat them
                    out += [replace(base, loop="open", batch=size, rate=r, length=length, seed=base.seed + i)
                            for i, r in enumerate(self.rates)]
                else:
                    out += [replace(base, loop="closed", batch=size, concurrency=c, length=length) for c in self.concurrencies]
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
