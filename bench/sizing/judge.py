"""Why a probe's verdict does not stand as measured: the machine's share, a queue not steady, a window cut short, or
an interval that straddles the SLO.

A probe says something of the endpoint only when the client carried its window (else "this machine was too busy",
re-measured: issue 45) and when its percentile's 95% interval lies on one side of the SLO. A 4-slot server with
heavy-tailed service (lognormal, CV 1.5) was answered 44% under its truth because probes whose measured p95 was
236–560 ms under a 600 ms SLO "failed" on the upper end of a 66–85-request interval: such a probe cannot tell, and
is inconclusive — neither a pass nor a failure — and so is one whose percentile is over the SLO while its interval's
lower end is under it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Protocol

from bench.load.histograms import decode, encode, merge, summary_ms
from bench.load.points import error_rate, machine_too_busy
from bench.results.schema import LoadPointRecord, Loop
from bench.sizing.adapt import carried_short, rates_text, stretch_at
from bench.sizing.plan import SizePlan, short_window
from bench.sizing.search import Doubt, Undecided
from bench.sizing.service_model import ServiceModel
from bench.sizing.slo import Slo, passes, sig3
from bench.sizing.steady import Growth
from bench.sizing.verdict import CONFIDENCE, correlated_bound_ms, verdict


class ProbeState(Protocol):
    """What a verdict on one measurement reads of its session."""

    plan: SizePlan
    capacity: float | None
    model: ServiceModel | None
    warmup_s: float
    probe_s: float


class Measured(ProbeState, Protocol):
    """A session's measurements so far, and why each open-loop one does not stand (its `unsteady`)."""

    points: list[LoadPointRecord]
    unsteady: list[tuple[LoadPointRecord, Doubt]]

    def unsteady_reason(self, record: LoadPointRecord) -> Doubt | None: ...


def doubt(state: ProbeState, record: LoadPointRecord, growth: Growth | None, whole: bool = False) -> Doubt | None:
    """Why `record`'s verdict is not the endpoint's steady verdict (None: it is): the machine too busy, its queue still
    growing (a failure), a window the budget cut short (unconfirmed), too few requests for one stretch of its queue
    (a failure), or an interval on both sides of the SLO (inconclusive). `whole`: a window known whole (an inconclusive
    window, whole, pooled with its extension), not checked against the budget's cut."""
    slo = state.plan.slo
    busy = machine_too_busy(record, slo.ms)
    if busy is not None:
        return Doubt(f"{busy}: re-measured, never the endpoint's verdict", fails=False, undecided=Undecided.BUSY)
    if growth is not None and growth.growing:
        return Doubt(growth.text())
    if not passes(record, slo, "scheduled"):
        return _failure_doubt(record, state)
    rate = record.rate or 0.0
    short = None if whole else short_window(state.plan, rate, state.capacity, state.warmup_s, state.probe_s)
    if short is not None:
        return Doubt(short, fails=False)
    together = stretch_at(state, rate)
    if record.requests.ok < together:
        moving = f"about {sig3(together)} in a row move together" if together < math.inf else "past capacity"
        return Doubt(
            f"its {record.requests.ok} requests are less than one stretch of its queue ({moving} at this "
            "load): too short a window for a pass to stand"
        )
    bound = correlated_bound_ms(record, "scheduled", slo, together)
    if bound is None or bound[0] <= slo.ms:
        return None
    return Doubt(
        f"inconclusive: its requests hold about {bound[1]} independent stretches of the queue (about "
        f"{sig3(together)} in a row move together at this load): the {CONFIDENCE:.0%} upper end of its {slo.name}, "
        f"{sig3(bound[0])} ms, is over the SLO while the {slo.name} is under it",
        fails=False,
        undecided=Undecided.INCONCLUSIVE,
    )


def _failure_doubt(record: LoadPointRecord, state: ProbeState) -> Doubt | None:
    """A percentile over the SLO whose 95% interval still reaches under it is no failure yet: inconclusive. Errors
    past the limit fail whatever the latency; a queue that starts empty only grows, so the lower end is taken over
    the requests as independent (the window's percentile is, if anything, under its steady one)."""
    slo = state.plan.slo
    if error_rate(record.requests) > slo.max_error_rate:
        return None
    judged = verdict(record, "scheduled", slo)
    if judged.value_ms is None or (judged.low_ms is not None and judged.low_ms > slo.ms):
        return None
    low = f"{sig3(judged.low_ms)} ms" if judged.low_ms is not None else "unbounded (too few requests)"
    return Doubt(
        f"inconclusive: its {slo.name} is over the SLO but the {CONFIDENCE:.0%} lower end of it, {low}, is under",
        fails=False,
        undecided=Undecided.INCONCLUSIVE,
    )


OUTCOMES = {
    Undecided.SHORT: "passed, unconfirmed",
    Undecided.INCONCLUSIVE: "inconclusive",
    Undecided.BUSY: "this machine was too busy",
}


def verdict_line(record: LoadPointRecord, slo: Slo, why: Doubt | None, cut: str | None) -> str:
    """`1.71/s offered, 1.70/s carried: failed — scheduled p95 … from 96 requests (95% interval …); why`: both rates,
    the outcome (passed, failed, passed unconfirmed, inconclusive, this machine was too busy) and what it rests on."""
    outcome = "passed" if why is None and passes(record, slo, "scheduled") else "failed"
    if why is not None and not why.fails:
        outcome = OUTCOMES[why.undecided]
    judged = verdict(record, "scheduled", slo).text(slo, "scheduled")
    steady = "".join(f"; {text}" for text in (why.text if why else None, cut, carried_short(record)) if text)
    return f"{rates_text(record)}: {outcome} — {judged}{steady}"


def pooled(first: LoadPointRecord, then: LoadPointRecord) -> LoadPointRecord:
    """An inconclusive probe extended: its two windows at one rate as one measurement (their requests, latency
    histograms and throughput over both windows), so the extension adds to what the first window showed instead of
    replacing it. Not written to the results file (each window is, as measured); the probe's verdict rests on it."""
    histograms = {
        quantity: encode(merge([first.histograms.get(quantity), then.histograms.get(quantity)]))
        for quantity in then.histograms
        if quantity in first.histograms
    }
    latency = replace(
        then.latency_ms,
        **{q: summary_ms(decode(histograms[q])) for q in ("service", "scheduled", "dispatch_delay") if q in histograms},
    )
    a, b = first.requests, then.requests
    requests = replace(
        b,
        sent=a.sent + b.sent,
        ok=a.ok + b.ok,
        errors={k: a.errors.get(k, 0) + b.errors.get(k, 0) for k in {*a.errors, *b.errors}},
        unsent=a.unsent + b.unsent,
        scheduled=(a.scheduled or 0) + (b.scheduled or 0) if b.scheduled is not None else None,
        scheduled_s=(a.scheduled_s or 0.0) + (b.scheduled_s or 0.0) if b.scheduled_s is not None else None,
    )
    seconds = first.duration_s + then.duration_s

    def rate(x: float, y: float) -> float:  # per-second figures over both windows
        return (x * first.duration_s + y * then.duration_s) / seconds if seconds > 0 else y

    t, u = first.throughput, then.throughput
    throughput = replace(
        u,
        requests_per_s=rate(t.requests_per_s, u.requests_per_s),
        texts_per_s=rate(t.texts_per_s, u.texts_per_s),
        tokens_per_s=rate(t.tokens_per_s, u.tokens_per_s),
    )
    return replace(
        then, duration_s=seconds, requests=requests, throughput=throughput, latency_ms=latency, histograms=histograms
    )


def extended(state: Measured, record: LoadPointRecord, growth: Growth | None) -> LoadPointRecord:
    """`record` pooled with the window just before it when that one, at the same rate, was inconclusive: the probe's
    extension adds to it (`pooled`), judged on both windows (its doubt kept in `state.unsteady`). Else `record`."""
    open_loop = [p for p in state.points if p.loop == Loop.OPEN]
    before = open_loop[-2] if len(open_loop) >= 2 and open_loop[-1] is record else None
    why = state.unsteady_reason(before) if before is not None else None
    if before is None or before.rate != record.rate or why is None or why.undecided != Undecided.INCONCLUSIVE:
        return record
    both = pooled(before, record)
    verdict_on_both = doubt(state, both, growth, whole=True)  # the first window was whole: it was judged on it
    if verdict_on_both is not None:
        state.unsteady.append((both, verdict_on_both))
    return both
