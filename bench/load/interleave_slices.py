"""`load --interleave --slice DURATION`: each round's windows cut into short slices, A's and B's alternated in one
sequence (X Y Y X X Y Y X …, X drawn per round), so both sides of a round share the same seconds of the machine.

    slices = slices_per_window(window_s, "0.25s", open_loop=False)   # checked: one line, exit 2
    a, b = SlicedPoint(endpoints, point, slices, workload).round(pool, again, first, tick)   # SideWindow each

A window of W seconds in S slices sends to its endpoint for S slices of W / S seconds each: a closed loop
(`--concurrency`) that stops sending at the slice's end and returns once every answer is in, so nothing is in
flight when the other side's slice starts. Each endpoint's requests are encoded once per point (not per slice),
the ring of distinct requests walked on from slice to slice, and warmed up once per point, in its first slice
(`--warmup`); the server drained (`LoadEndpoint.drain`) once per round, after its last slice. A side's window is
its slices merged as one measurement: counts summed, histograms merged exactly, and the rates over the summed
measured time of its slices (each from its start, or its first send where its worker woke late, to its end or
its last answer, whichever is later: the gaps between slices, in which that side sends nothing, are not its
measured time). Each slice's own texts/s is kept beside the window (`SideWindow.slice_texts_per_s`): a side's
k-th slice ran back to back with the other side's k-th (X Y | Y X), the finest pair the gate can judge
(bench/gate/paired.py). Slices start SLICE_LEAD_S after they are handed to the worker, not START_LEAD_S: the
plans are built already.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from time import perf_counter

from bench.core import values as v
from bench.core.errors import UserError
from bench.core.machine import MachineWatch
from bench.load import histograms
from bench.load.endpoint import LoadEndpoint
from bench.load.measure import DRAIN_MIN_S
from bench.load.merge import merge_shares
from bench.load.points import PointConfig
from bench.load.pool import run_plans
from bench.load.share import SharePlan, ShareResult
from bench.load.shares import share_plans
from bench.load.workload import Workload
from bench.results.schema import LoadPointRecord

SLICE_LEAD_S = 0.02  # a slice's plans reach the worker (running, plans built); a later wake is not measured time
# The shortest --slice: each slice costs its lead and a dispatch to the pool (~30 ms a slice measured: 3 rounds of
# 1 s in 1 ms slices took 180 s, not 6) outside its measured time; at 0.1 s a round's wall time stays within ~1.3x
# its windows, and its slice pairs stay as many as a round's seconds allow (10 a second), not thousands
MIN_SLICE_S = 0.1


def slices_per_window(window_s: float, text: str | None, open_loop: bool) -> int:
    """`--slice`: how many slices a window is cut into (the window ÷ the slice, rounded, at least 1); 1 without
    it. A slice longer than the window or under MIN_SLICE_S, or an open loop (its schedule is one per window), is
    one line, exit 2."""
    if text is None:
        return 1
    slice_s = v.duration("--slice", text, v.SECONDS)
    if open_loop:
        raise UserError(
            "load --interleave: --slice cuts a closed loop (--concurrency); the open loop (--rate) runs whole windows"
        )
    if slice_s <= 0 or slice_s > window_s:
        raise UserError(f"load --interleave: --slice {text} must be above 0 and at most the --window ({window_s:g}s)")
    if slice_s < MIN_SLICE_S:
        raise UserError(
            f"load --interleave: --slice {text} is under {MIN_SLICE_S:g}s: each slice costs ~30 ms of lead and "
            f"dispatch outside its measured time (1 ms slices made 3 rounds of 1 s take 180 s); give --slice "
            f"{MIN_SLICE_S:g}s or more"
        )
    return max(1, round(window_s / slice_s))


def slice_order(first: int, slices: int) -> list[int]:
    """The round's sequence of sides (0: the side that goes first): X Y Y X X Y Y X … over 2 × `slices` slices,
    each side `slices` times, balanced against a drift within every four slices."""
    pattern = (first, 1 - first, 1 - first, first)
    return [pattern[i % 4] for i in range(2 * slices)]


@dataclass(frozen=True)
class SideWindow:
    """One side's window of a round: its slices merged as one measurement, and each slice's own texts/s in the order
    measured (None: a slice with no measured time; a whole window, not cut in slices, has none)."""

    record: LoadPointRecord
    slice_texts_per_s: list[float | None] | None


@dataclass
class SlicedPoint:
    """One point's slices on both endpoints: plans built once, the request ring's position and warm-up per side."""

    endpoints: list[LoadEndpoint]
    point: PointConfig
    slices: int
    workload: Workload
    plans: list[list[SharePlan]] = field(default_factory=list)
    sent: list[int] = field(default_factory=lambda: [0, 0])  # requests handled per side: where its ring goes on
    warmed: list[bool] = field(default_factory=lambda: [False, False])

    @property
    def slice_s(self) -> float:
        return (self.point.duration_s or 0.0) / self.slices

    def round(
        self, pool: Executor, point: PointConfig, first: int, tick: Callable[[], None]
    ) -> tuple[SideWindow, SideWindow]:
        """One round: every slice of both sides in `slice_order`, then each side's window and its drain."""
        if not self.plans:
            sliced = replace(self.point, duration_s=self.slice_s)
            self.plans = [share_plans(e, sliced, self.workload, start_at=0.0) for e in self.endpoints]
        shares: list[list[list[ShareResult]]] = [[], []]
        watch = MachineWatch.start()  # the host during the round's slices, both sides' alike
        for side in slice_order(first, self.slices):
            shares[side].append(run_plans(pool, self._next_plans(side), tick))
            self.sent[side] += sum(s.handled for s in shares[side][-1])
        windows = [self._window(side, point, shares[side]) for side in (0, 1)]
        machine = watch.stop()
        for endpoint, window in zip(self.endpoints, windows, strict=True):
            window.record.machine = machine
            window.record.drain = endpoint.drain(max(point.timeout_s, DRAIN_MIN_S))
        return windows[0], windows[1]

    def _next_plans(self, side: int) -> list[SharePlan]:
        """This side's plans for its next slice: starting SLICE_LEAD_S from now, the ring rotated to where the last
        slice left it, with the point's warm-up in its first slice only."""
        warmup = 0.0 if self.warmed[side] else self.point.warmup_s
        self.warmed[side] = True
        start_at = perf_counter() + SLICE_LEAD_S
        return [replace(_rotated(p, self.sent[side]), start_at=start_at, warmup_s=warmup) for p in self.plans[side]]

    def _window(self, side: int, point: PointConfig, slices: list[list[ShareResult]]) -> SideWindow:
        record = merge_slices(
            self.endpoints[side].spec.name, replace(point, duration_s=self.slice_s), slices, self.workload
        )
        return SideWindow(record, [slice_texts_per_s(shares, self.slice_s) for shares in slices])


def _rotated(plan: SharePlan, by: int) -> SharePlan:
    """The plan with its ring of requests turned `by` places (requests, texts and tokens alike); an in-process
    endpoint's (its call holds the payloads by index) is left as it is: each slice starts its ring again."""
    n = len(plan.inputs)
    k = by % n if n else 0
    if k == 0 or plan.call is not None:
        return plan
    return replace(
        plan,
        requests=plan.requests[k:] + plan.requests[:k],
        inputs=plan.inputs[k:] + plan.inputs[:k],
        tokens=plan.tokens[k:] + plan.tokens[:k],
    )


def merge_slices(
    endpoint: str, slice_point: PointConfig, slices: list[list[ShareResult]], workload: Workload
) -> LoadPointRecord:
    """One side's slices as one window: each slice's shares moved in time so that the slices follow each other
    with no gap (slice k starts where slice k - 1's measured time ended), then merged as the shares of one point
    of the slices' summed intended time; its measured time is the sum of theirs (`slice_span`)."""
    moved: list[ShareResult] = []
    at = 0.0
    for shares in slices:
        elapsed = slice_span(shares, slice_point.duration_s or 0.0)
        if elapsed is None:
            continue
        # every share of the slice ends where its measured time does: the slices' sum is the window's time
        moved += [replace(s, first_measured=at, last_end=at + elapsed) for s in shares]
        at += elapsed
    # the window is the slices' summed measured time, not their intended sum: a slice whose worker woke late
    # measured less than its intended time, and the intended sum put the window's rate under every slice's own
    whole = replace(slice_point, duration_s=at if at > 0 else (slice_point.duration_s or 0.0) * len(slices))
    record = merge_shares(endpoint, whole, moved, workload)
    if record.client.loop_lag_p99_ms is None:  # a side's second of slices holds < 100 of the 10 ms lag probe's
        lag = histograms.summary_ms(histograms.merge([s.loop_lag for s in moved]))
        record.client.loop_lag_p99_ms = lag.max if lag is not None else None  # their p99 order statistic: the max
    return record


def slice_span(shares: list[ShareResult], slice_s: float) -> float | None:
    """A slice's measured seconds: from its start to its planned end or its last answer, whichever is later. Its
    start is the planned one (the end of its warm-up), or its first send where its worker woke later than that (a
    busy machine: the worker's wall time runs from its first send to its last answer), so the time the client was
    not yet sending is no one's throughput; None for a slice with no planned start."""
    planned = [s.first_measured for s in shares if s.first_measured is not None]
    if not planned:
        return None
    starts = [
        max(s.first_measured, s.last_end - s.wall_s) if s.last_end is not None and s.wall_s > 0 else s.first_measured
        for s in shares
        if s.first_measured is not None
    ]
    end = max([min(planned) + slice_s, *(s.last_end for s in shares if s.last_end is not None)])
    return end - min(starts)


def slice_texts_per_s(shares: list[ShareResult], slice_s: float) -> float | None:
    """One slice's texts answered over its measured seconds (`slice_span`); None: no measured time."""
    elapsed = slice_span(shares, slice_s)
    if elapsed is None or elapsed <= 0:
        return None
    return sum(s.texts_ok for s in shares) / elapsed
