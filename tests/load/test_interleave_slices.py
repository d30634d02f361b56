"""`load --interleave --slice`: the slices' count and order, each side's slices merged as one window over their
summed measured time, and a round run on a recording executor (no server, no clock asserted): the sides
alternate X Y Y X, the warm-up is in each side's first slice only and the ring of requests walks on."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench.core.errors import UserError
from bench.load import histograms
from bench.load.interleave_slices import (
    SlicedPoint,
    _rotated,
    merge_slices,
    slice_order,
    slice_span,
    slice_texts_per_s,
    slices_per_window,
)
from bench.load.points import PointConfig
from bench.load.quantities import LatencyQuantity, ServerQuantity
from bench.load.share import SharePlan, ShareResult
from bench.results.schema import Loop

WORKLOAD: Any = SimpleNamespace(tokens_source="words", distribution=None)  # merge_shares reads only these
WORKLOAD.with_length = lambda length: WORKLOAD  # one length: no cut, no drawn distribution
WORKLOAD.ring = lambda size: 1


@pytest.mark.parametrize("text,slices", [(None, 1), ("0.25s", 4), ("1s", 1), ("0.3s", 3), ("400ms", 2)])
def test_a_window_is_cut_into_the_nearest_whole_number_of_slices(text, slices):
    assert slices_per_window(1.0, text, open_loop=False) == slices


@pytest.mark.parametrize(
    "text,open_loop,message",
    [
        ("2s", False, "at most the --window (1s)"),
        ("0.25s", True, "--slice cuts a closed loop"),
        ("x", False, "--slice 'x'"),
        ("1ms", False, "--slice 1ms is under 0.1s"),  # issue 50: 3 rounds of 1 s in 1 ms slices took 180 s
        ("99ms", False, "--slice 99ms is under 0.1s"),
    ],
)
def test_a_slice_past_the_window_an_open_loop_or_no_duration_is_refused(text, open_loop, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        slices_per_window(1.0, text, open_loop)


@pytest.mark.parametrize("first", [0, 1])
@pytest.mark.parametrize("slices", [1, 2, 3, 4])
def test_the_order_alternates_x_y_y_x_each_side_as_often_and_starts_with_the_drawn_side(first, slices):
    order = slice_order(first, slices)
    assert len(order) == 2 * slices and order.count(0) == order.count(1) == slices and order[0] == first
    assert order[:4] == [first, 1 - first, 1 - first, first][: len(order)]
    if slices % 2 == 0:  # every four slices balanced: the mean position of each side is the same
        positions = [[i for i, side in enumerate(order) if side == s] for s in (0, 1)]
        assert np.mean(positions[0]) == pytest.approx(np.mean(positions[1]))


def _service(count: int, ms: float) -> dict[str, str | None]:
    h = histograms.encode(histograms.from_values(np.full(count, int(ms * 1000))))
    return dict.fromkeys((*LatencyQuantity, *ServerQuantity), h)


def _share(start: float, end: float, ok: int, ms: float = 20.0, errors: int = 0) -> ShareResult:
    return ShareResult(
        worker=0,
        sent=ok + errors,
        ok=ok,
        texts_ok=ok,
        handled=ok + errors,
        errors={"timeout": errors} if errors else {},
        first_measured=start,
        last_end=end,
        histograms=_service(ok, ms),
    )


def test_a_sides_slices_are_one_window_over_their_summed_measured_time():
    """Three slices of 0.25 s intended, a second apart: the second ran 0.4 s (its last answer late). The window is
    0.25 + 0.4 + 0.25 s, not the 2.7 s from the first start to the last end; counts and histograms summed."""
    point = PointConfig(op="embed", concurrency=1, duration_s=0.25, warmup_s=0.0)
    slices = [[_share(10.0, 10.2, 10)], [_share(11.0, 11.4, 12, errors=1)], [_share(12.5, 12.7, 10, ms=30.0)]]
    record = merge_slices("a", point, slices, WORKLOAD)
    assert record.duration_s == pytest.approx(0.9)
    assert record.throughput.texts_per_s == pytest.approx(32 / 0.9)
    assert (record.requests.ok, record.requests.sent, record.requests.errors) == (32, 33, {"timeout": 1})
    service = record.latency_ms.service
    assert service is not None and service.count == 32
    assert service.mean == pytest.approx((22 * 20 + 10 * 30) / 32, rel=0.01)
    assert service.max == pytest.approx(30, rel=0.01)


def test_a_window_of_late_woken_slices_has_its_rate_among_its_slices_rates():
    """Each slice's worker woke 0.1 s late (its first send at 10.1 of a slice planned from 10.0): each slice measured
    0.15 s, not 0.25. The window is their summed 0.45 s; over the intended 0.75 s its rate fell under every slice's
    own (seen on a loaded runner: 22.0 texts/s beside slices of 22.7 and more)."""
    point = PointConfig(op="embed", concurrency=1, duration_s=0.25, warmup_s=0.0)
    slices = [[replace(_share(t, t + 0.2, 10), wall_s=0.1)] for t in (10.0, 11.0, 12.0)]
    rates = [slice_texts_per_s(shares, 0.25) for shares in slices]
    record = merge_slices("a", point, slices, WORKLOAD)
    assert rates == [pytest.approx(10 / 0.15)] * 3
    assert record.duration_s == pytest.approx(0.45) and record.throughput.texts_per_s == pytest.approx(30 / 0.45)


def test_each_slice_keeps_its_own_texts_per_s_over_its_own_measured_time():
    """The window's rate is over the slices' summed time; each slice's is over its own (a late last answer
    lengthens that slice alone); a slice with no planned start has none."""
    assert slice_texts_per_s([_share(10.0, 10.2, 10)], 0.25) == pytest.approx(40.0)
    assert slice_texts_per_s([_share(11.0, 11.4, 12), _share(11.0, 11.3, 4)], 0.25) == pytest.approx(16 / 0.4)
    assert slice_texts_per_s([ShareResult(worker=0)], 0.25) is None


def test_a_slice_whose_worker_woke_late_is_measured_from_its_first_send():
    """Planned at 10.0 for 0.25 s; the worker's wall time (first send to last answer) is 0.25 s and its last answer
    came at 10.3: it started sending at 10.05, and those 50 ms are no one's throughput. A warm-up (wall time
    longer than the slice) leaves the planned start."""
    late = replace(_share(10.0, 10.3, 12), wall_s=0.25)
    assert slice_span([late], 0.25) == pytest.approx(0.25)
    warmed = replace(_share(10.0, 10.3, 12), wall_s=0.8)  # 0.5 s of warm-up before 10.0
    assert slice_span([warmed], 0.25) == pytest.approx(0.3)
    assert slice_span([_share(10.0, 10.1, 4)], 0.25) == pytest.approx(0.25)  # the planned end, not the last answer
    assert slice_span([ShareResult(worker=0)], 0.25) is None


def test_the_ring_of_requests_turns_with_its_texts_and_tokens():
    plan = SharePlan(0, Loop.CLOSED, None, [b"r0", b"r1", b"r2"], [1, 2, 3], [10, 20, 30], 0.0, 0.0, 1.0)
    turned = _rotated(plan, 4)  # 4 requests sent: the next slice goes on from the second
    assert (turned.requests, turned.inputs, turned.tokens) == ([b"r1", b"r2", b"r0"], [2, 3, 1], [20, 30, 10])
    assert _rotated(plan, 3) is plan
    in_process = replace(plan, requests=[], call=lambda index: None)
    assert _rotated(in_process, 4) is in_process  # its call holds the payloads by index: not turned


class Recording(Executor):
    """Runs no share: answers each plan with `ok` requests over exactly its intended time, and keeps the plans."""

    def __init__(self, ok: dict[str, int]):
        self.ok, self.plans = ok, []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        (plan,) = args
        self.plans.append(plan)
        start = plan.start_at + plan.warmup_s
        future: Future[ShareResult] = Future()
        future.set_result(_share(start, start + plan.duration_s, self.ok[plan.requests[0][:1].decode()]))
        return future


def _endpoint(name: str) -> Any:
    return SimpleNamespace(spec=SimpleNamespace(name=name), drain=lambda timeout_s: None)


def test_a_round_alternates_the_sides_warms_each_once_and_walks_the_ring():
    point = PointConfig(op="embed", concurrency=1, duration_s=1.0, warmup_s=0.5)
    sliced = SlicedPoint([_endpoint("a"), _endpoint("b")], point, 2, WORKLOAD)
    rings = [[f"{side}{i}".encode() for i in range(7)] for side in "ab"]
    sliced.plans = [[SharePlan(0, Loop.CLOSED, None, ring, [1] * 7, [5] * 7, 0.0, 0.0, 0.5)] for ring in rings]
    pool = Recording({"a": 10, "b": 9})

    a_window, b_window = sliced.round(pool, point, first=1, tick=lambda: None)
    a, b = a_window.record, b_window.record
    assert [p.requests[0][:1] for p in pool.plans] == [b"b", b"a", b"a", b"b"]  # X Y Y X, B drawn first
    assert [p.warmup_s for p in pool.plans] == [0.5, 0.5, 0.0, 0.0]  # each side's first slice only
    assert all(p.duration_s == 0.5 for p in pool.plans)
    assert pool.plans[2].requests[0] == rings[0][10 % 7]  # a's second slice goes on after the 10 it sent
    assert (a.requests.ok, b.requests.ok) == (20, 18) and a.duration_s == pytest.approx(1.0)
    assert (a.throughput.texts_per_s, b.throughput.texts_per_s) == (pytest.approx(20.0), pytest.approx(18.0))
    assert a_window.slice_texts_per_s == [pytest.approx(20.0)] * 2  # 10 texts in each 0.5 s slice
    assert b_window.slice_texts_per_s == [pytest.approx(18.0)] * 2

    pool.plans.clear()
    sliced.round(pool, point, first=0, tick=lambda: None)
    assert [p.requests[0][:1] for p in pool.plans] == [b"a", b"b", b"b", b"a"]
    assert all(p.warmup_s == 0.0 for p in pool.plans)  # warmed once per point, not per round
