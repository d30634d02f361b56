"""The closed-loop sweep of a size run, and the batch and concurrency it chooses for the open-loop search."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.load.lengths import DocumentsDraw
from bench.load.points import error_rate, texts_per_s
from bench.results.schema import LoadPointRecord, Loop
from bench.sizing.budget import Budget
from bench.sizing.plan import CLOSED_POINTS_PER_BATCH, OVERRUN
from bench.sizing.slo import Slo, passes, sig3

GAIN_TO_CONTINUE = 0.05  # a closed-loop sweep goes on to the next concurrency while texts/s rises by 5% or more
# Of a --max-time budget, the most the closed sweep may take: the rest is the saturation search's, whose verdicts
# need the long windows. Issue 48: against a 4-slot heavy-tailed server the sweep of batches 1, 8 and 32 took 64 s
# of a 90 s budget, and the search had 17 s (one probe: no answer); a steady p95 pass there needs a window of 80 s
# or more at any rate (service_model.requests_to_decide). A third keeps every batch of the default 240 s budget.
CLOSED_SHARE = 1 / 3


def closed_sweep(
    measure: Callable[[int | DocumentsDraw, int], LoadPointRecord],
    batches: list[int | DocumentsDraw],
    max_concurrency: int,
    slo: Slo,
    another: Callable[[], bool] = lambda: True,
) -> list[LoadPointRecord]:
    """Per batch (or documents draw), concurrency 1, 2, 4, … ≤ max_concurrency, until texts/s gains < 5% or errors
    pass the limit. A batch after the first is swept only while `another` says its points fit (closed_share): a
    batch is swept whole or not at all (its knee is what the capacity and the service model read)."""
    points: list[LoadPointRecord] = []
    for batch in batches:
        if points and not another():
            break
        best = 0.0
        concurrency = 1
        while concurrency <= max_concurrency:
            point = measure(batch, concurrency)
            points.append(point)
            if error_rate(point.requests) > slo.max_error_rate or texts_per_s(point) < best * (1 + GAIN_TO_CONTINUE):
                break
            best = texts_per_s(point)
            concurrency *= 2
    return points


def closed_share(budget: Budget, point_s: float, say: Callable[[str], None]) -> Callable[[], bool]:
    """`another` for closed_sweep within `budget`: another batch is swept while the sweep, that batch's usual points
    included (CLOSED_POINTS_PER_BATCH of `point_s`, warm-up and window, with their OVERRUN), stays within CLOSED_SHARE
    of the budget left when it started; the batches left out are said."""
    until = budget.spent + CLOSED_SHARE * budget.left()
    batch_s = CLOSED_POINTS_PER_BATCH * point_s * OVERRUN

    def another() -> bool:
        if budget.spent + batch_s <= until:
            return True
        say(
            f"size: the closed sweep ends here: another batch (about {sig3(batch_s)} s) would take it past "
            f"{CLOSED_SHARE:.0%} of the budget left when it started (to {sig3(until)} s of --max-time "
            f"{sig3(budget.seconds or 0)} s); the rest is the saturation search's"
        )
        return False

    return another


@dataclass
class ClosedChoice:
    peak: LoadPointRecord | None  # best texts/s with errors under the limit, latency aside: the server's throughput
    best: LoadPointRecord | None  # the chosen batch's best texts/s under the SLO: fixes batch and concurrency
    # per batch with a point under the SLO: (its best point, texts/s expected at the SLO), best first
    ranked: list[tuple[LoadPointRecord, float]] = field(default_factory=list)


def slo_texts_per_s(point: LoadPointRecord, slo: Slo) -> float:
    """Texts/s a batch can be offered at the SLO under random arrivals, from a closed-loop point: a queue's
    response-time percentile is about ln(1/(1−q)) × its mean, an M/M/1 queue's mean is 1/(μ−λ) and a deterministic
    server's half that (Pollaczek–Khinchine), so λ ≤ μ − ln(1/(1−q))/(2·SLO) requests/s. A rough model, used only to
    rank batches: a large batch whose requests take a good part of the SLO leaves little room for queueing, however
    many texts/s it reaches with the queue kept full."""
    queueing = math.log(1 / (1 - slo.percentile / 100.0)) / (2 * slo.ms / 1000.0)
    return max(0.0, point.throughput.requests_per_s - queueing) * point.batch


def choose_closed(points: list[LoadPointRecord], slo: Slo) -> ClosedChoice:
    closed = [p for p in points if p.loop == Loop.CLOSED and error_rate(p.requests) <= slo.max_error_rate]
    within = [p for p in closed if passes(p, slo, "service")]
    # Grouped by size_text: a documents draw (poisson:10) is not the fixed size of its mean (10).
    sizes = sorted({p.size_text for p in within})
    per_batch = [max((p for p in within if p.size_text == s), key=texts_per_s) for s in sizes]
    # The most texts/s at the SLO; among batches the queueing model leaves none, the most raw texts/s.
    ranked = sorted(((p, slo_texts_per_s(p, slo)) for p in per_batch), key=lambda t: (-t[1], -texts_per_s(t[0])))
    return ClosedChoice(
        peak=max(closed, key=texts_per_s, default=None), best=ranked[0][0] if ranked else None, ranked=ranked
    )


def closed_capacity(points: list[LoadPointRecord]) -> float:
    """Requests/s the server serves at best, from one batch's closed-loop points: their highest achieved rate, or
    one request's mean service time at concurrency 1 when that is faster. A lone user's achieved rate also counts
    the client's gap between an answer and its next request — 2.27/s from a one-slot server of 2.5/s (400 ms each)
    on a busy machine — which is no capacity of the server, and the steady-state model (search start, warm-up,
    window) built on it started the search 17% under the truth."""
    achieved = max(p.throughput.requests_per_s for p in points)
    lone = [
        1000.0 / p.latency_ms.service.mean
        for p in points
        if p.concurrency == 1 and p.latency_ms.service is not None and p.latency_ms.service.mean > 0 and p.requests.ok
    ]
    return max([achieved, *lone])
