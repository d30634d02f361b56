"""How the search adapts to what its probes measure: a capacity that collapsed, a rate a verdict can be reached at,
and a window that carried less than its label.

`size` on a machine whose load rose mid-run measured 18.5 requests/s in the closed loop, then 5.9/s and 2.9/s in
its probes (211 timeouts) and answered "none yet" under the heading "a lower bound", no lower rate tried: the
search kept the capacity of a server that no longer existed. A probe offered well under that capacity whose server
answered far less than it was sent is the capacity measured now: the search restarts from it (issue 45).
"""

from __future__ import annotations

import math
from typing import Protocol

from bench.load.points import carried_rate, percentile_ms, recorded_us
from bench.results.schema import LoadPointRecord
from bench.sizing.plan import (
    MAX_PROBE_S,
    MODEL_GROWTH,
    OVERRUN,
    SizePlan,
    probe_settle_s,
    probe_stretch,
    probe_warmup,
    search_start,
)
from bench.sizing.search import CARRIED_SHORT, Probe, Saturation, saturation_from, sent_share
from bench.sizing.service_model import ServiceModel, requests_for
from bench.sizing.slo import sig3

# A probe offered at most this share of the capacity the search assumes: a server that keeps up answers about what
# it is sent (a queue under capacity settles), so answering much less is a capacity that fell, not an overload.
COLLAPSE_OFFERED = 0.9
# ... and answered more than this share less than it was sent (and by more than 3 Poisson deviations), and less than
# COLLAPSE_OF_CAPACITY of that capacity (issue 45: 5.9/s where the closed loop carried 18.5/s). A probe near an
# optimistic capacity whose queue built up answers less than it was sent too (25.9/s offered, 13.4/s answered in
# the 3 s before its failure was certain, on a server of 27/s): no collapse, and restarting from it poisoned the
# model (a server 2.4 times slower than it is).
COLLAPSE_SHORT = 0.2
COLLAPSE_OF_CAPACITY = 0.5
# The search starts at most this busy: a few hundred measured service times of a heavy tail miss most of it (173
# draws of a lognormal of CV 1.5 put its M/G/4 start at 29.7/s, over the 27/s capacity: 60 s warm-ups that failed),
# and a probe near capacity costs minutes of warm-up.
START_MAX_BUSY = 0.8
STEPS_DOWN = 8  # how far below a rate the search looks for one whose verdict its budget can reach


class Modelled(Protocol):
    plan: SizePlan
    capacity: float | None
    model: ServiceModel | None


class SearchState(Modelled, Protocol):
    start_rate: float


def collapse(state: SearchState, probe: Probe) -> tuple[float, float, str] | None:
    """(the capacity measured now, the rate to restart from, why) when `probe` failed at a rate well under the
    assumed capacity and its server answered far less than it was sent and than half that capacity; None otherwise.
    Its window must have run whole (the caller's): one that ended early holds the answers of a queue still filling."""
    capacity, point = state.capacity, probe.point
    if capacity is None or not probe.failed or probe.too_busy is not None or probe.confirmed is False:
        return None
    offered = probe.carried or probe.rate
    answered = point.throughput.requests_per_s
    noise = 3.0 * math.sqrt(offered / point.duration_s) if point.duration_s > 0 else math.inf
    if offered > COLLAPSE_OFFERED * capacity or offered - answered <= max(COLLAPSE_SHORT * offered, noise):
        return None
    if answered >= COLLAPSE_OF_CAPACITY * capacity:
        return None
    now = max(answered, 0.01 * capacity)
    start = max(float(f"{state.start_rate * now / capacity:.3g}"), 0.01)
    why = (
        f"the capacity collapsed: at {sig3(offered)} requests/s offered (under the {sig3(capacity)}/s measured "
        f"before) the server answered {sig3(answered)}/s, so the search restarted from {sig3(start)}/s at the "
        "capacity measured now; the probes before it are not the answer"
    )
    return now, start, why


def rescaled(model: ServiceModel | None, capacity: float, now: float) -> ServiceModel | None:
    """The service model of a server whose capacity fell from `capacity` to `now`: each service that much longer."""
    if model is None or now <= 0:
        return None
    return ServiceModel(model.service_s * (capacity / now), model.slots)


def lower_rate(state: SearchState, rate: float, growth: float, left_s: float) -> float:
    """The next rate down from `rate`: the highest of rate ÷ growthᵏ whose pass the measured service distribution says
    a window within the budget left can show (its requests to decide, after its warm-up), so the budget is not spent
    on rates no window it holds can decide; rate ÷ growth without a model or when none fits."""
    model, plan = state.model, state.plan
    if model is None:
        return rate / growth
    slo_s, usable = plan.slo.ms / 1000.0, left_s / OVERRUN
    for k in range(1, STEPS_DOWN + 1):
        candidate = rate / growth**k
        needed = model.requests_to_decide(candidate, slo_s, plan.slo.percentile)
        if needed is None:
            continue
        window = max(needed / candidate, probe_settle_s(plan, candidate, state.capacity))
        if window <= MAX_PROBE_S and probe_warmup(plan, candidate, state.capacity) + window <= usable:
            return candidate
    return rate / growth


def carried_short(record: LoadPointRecord) -> str | None:
    """`the client sent 96 of its 117 scheduled requests (18% short): judged at 1.4/s` (None: within CARRIED_SHORT)."""
    share = sent_share(record)
    if record.rate is None or share is None or share >= 1.0 - CARRIED_SHORT:
        return None
    return (
        f"the client sent {record.requests.sent} of its {record.requests.scheduled} scheduled requests "
        f"({1 - share:.0%} short): judged at {sig3(record.rate * share)}/s"
    )


def rates_text(record: LoadPointRecord) -> str:
    """`1.71/s offered, 1.7/s carried` (3 digits each); `1.71 requests/s offered` when nothing says it."""
    carried = carried_rate(record.requests)
    if record.rate is None or carried is None:
        return f"{sig3(record.rate or 0.0)} requests/s offered"
    return f"{sig3(record.rate)}/s offered, {sig3(carried)}/s carried"


def modelled_start(state: SearchState) -> float | None:
    """The rate at which the measured service times' queue (M/G/c) keeps the SLO's percentile in steady state;
    without a model (too few service times measured), one FIFO server of the closed loop's capacity (M/D/1)."""
    slo = state.plan.slo
    if state.model is None:
        return search_start(state.plan, state.capacity) if state.capacity else None
    rate = state.model.saturation(slo.ms / 1000.0, slo.percentile)
    if state.capacity is not None:  # a few hundred draws miss a heavy tail: never a start near capacity
        rate = min(rate, START_MAX_BUSY * state.capacity)
    return rate if rate > 0 else None


def start_text(model: ServiceModel | None) -> str:
    """What the search's start rests on, for its line."""
    if model is None or len(model.service_s) == 1:
        return (
            "one FIFO server of the closed loop's capacity, each request 1/capacity s (too few service times "
            "measured for a tail of their own)"
        )
    return (
        f"the queue of the {len(model.service_s)} service times the closed loop measured, served by "
        f"{model.slots} slot{'s' if model.slots > 1 else ''} in arrival order (simulated)"
    )


def tighter_text(state: SearchState, saturation: Saturation, spent_s: float) -> str | None:
    """What a tighter answer needs when the answer is an interval wider than --tolerance (or no rate passed below a
    failure): the requests a verdict needs at the undecided rates (or the interval's middle) by the measured service
    times' queue and the probe's own window (decide_after), the seconds a probe that makes, and the --max-time that
    would hold one more such probe each."""
    plan, model = state.plan, state.model
    low, high = saturation.rate, saturation.first_failure
    if high is None or (low is not None and (high - low) / low <= plan.tolerance):
        return None
    slo_s = plan.slo.ms / 1000.0
    rates = saturation.inconclusive or [(low + high) / 2 if low is not None else high / MODEL_GROWTH]
    said: list[str] = []
    seconds = 0.0
    measured = {p.judged_rate: p.point for p in saturation.probes if p.inconclusive}
    for rate in rates:
        seen = measured.get(rate)
        needed = (
            (
                decide_after(state, seen)
                if seen is not None
                else model.requests_to_decide(rate, slo_s, plan.slo.percentile)
            )
            if model
            else None
        )
        if model is not None and needed is None:
            said.append(f"at {sig3(rate)}/s the SLO sits on its {plan.slo.name}: no window decides it")
            continue
        needed = needed or plan.probe_requests
        probe_s = probe_warmup(plan, rate, state.capacity) + needed / rate
        seconds += probe_s * OVERRUN
        said.append(f"at {sig3(rate)}/s about {needed:,} requests ({sig3(probe_s)} s a probe)")
    budget = f": --max-time of about {sig3(spent_s + seconds)} s" if seconds else ""
    return (
        "a tighter answer needs a verdict between "
        + (f"{sig3(low)} and " if low is not None else "0 and ")
        + f"{sig3(high)} requests/s — {'; '.join(said)}"
        + (" (by the queue of the measured service times and each probe's own share under the SLO)" if model else "")
        + budget
    )


def best_so_far(probes: list[Probe]) -> str:
    """What the answer is when the budget ends the search: an interval, a lower bound, or no pass (below a failure)."""
    answer = saturation_from(probes)
    if answer.rate is None:
        return "no rate passed" + (f": below {sig3(answer.first_failure)} requests/s" if answer.first_failure else "")
    if answer.first_failure is not None:
        return "the interval between the highest steady pass and the lowest failure"
    return "a lower bound"


def extension_s(state: Modelled, last: LoadPointRecord, decide: int | None) -> float | None:
    """The warm-up and window a probe gets after its inconclusive window `last`: twice that window (pooled with it:
    judge.pooled), when the service distribution's queue says both windows together may decide it (or there is no
    model); else None — the budget goes to rates that can be decided."""
    rate = last.rate or 0.0
    window = min(2 * last.duration_s, MAX_PROBE_S)
    if state.model is not None and (decide is None or decide > last.requests.ok + rate * window):
        return None
    return probe_warmup(state.plan, rate, state.capacity) + window


def requests_to_decide(state: Modelled, rate: float) -> int | None:
    """Requests a verdict at `rate` needs by the measured service distribution's queue (None: no model, or no window
    decides it there: the SLO sits on the percentile)."""
    slo = state.plan.slo
    return state.model.requests_to_decide(rate, slo.ms / 1000.0, slo.percentile) if state.model else None


def stretch_at(state: Modelled, rate: float) -> float:
    """Requests in a row that move together at `rate`: from the measured service distribution's queue when there is
    one (its simulated slow requests' autocorrelation), else the M/M/1 relaxation at the closed loop's capacity."""
    model, slo = state.model, state.plan.slo
    if model is not None and rate > 0:
        return model.stretch(rate, slo.ms / 1000.0, slo.percentile)
    return probe_stretch(state.plan, rate, state.capacity)


def seen_requests_to_decide(state: Modelled, record: LoadPointRecord) -> int | None:
    """Requests a verdict at `record`'s rate needs by its own window: the share of its requests under the SLO, and
    how far that sits from the percentile (service_model.requests_for; None: on it). A closed sweep's few hundred
    service times miss most of a heavy tail (one said 198 requests decide 12.4/s; that window's own share said
    several times more); the probe's window holds it."""
    buckets = recorded_us(record, "scheduled")
    total = sum(count for _, count in buckets) if buckets else 0
    if not buckets or not total:
        return None
    slo = state.plan.slo
    under = sum(count for value, count in buckets if value <= slo.ms * 1000.0)
    return requests_for(under / total, slo.percentile, stretch_at(state, record.rate or 0.0))


def decide_after(state: Modelled, record: LoadPointRecord) -> int | None:
    """Requests a verdict at `record`'s rate needs, by the model and by the window itself, whichever says more
    (None: either says no window decides it)."""
    model = requests_to_decide(state, record.rate or 0.0)
    seen = seen_requests_to_decide(state, record)
    if state.model is None:
        return seen
    return None if model is None or seen is None else max(model, seen)


def seen_below(state: Modelled, record: LoadPointRecord, before: tuple[float, int] | None) -> tuple[float, int] | None:
    """(rate, requests) that a pass below `rate` needs at most, after `record` was inconclusive on the pass side: its
    window's own count (decide_after) — a percentile only falls with the rate, so its share under the SLO only rises
    and no lower rate needs more (a heavy tail's probes got their even share, 60–180 requests, and stepped down
    seven times inconclusive). The lowest such rate seen is kept."""
    slo = state.plan.slo
    value = percentile_ms(record, "scheduled", slo.percentile)
    if value is None or value > slo.ms or (before is not None and before[0] <= (record.rate or 0.0)):
        return before
    needed = decide_after(state, record)
    return (record.rate or 0.0, needed) if needed is not None and needed > record.requests.ok else before


# A rate whose modelled percentile is within this share of the SLO sits on it: no window decides it, and a probe
# there gets its even share of the budget (a failure shows in any window). Further under, a pass can stand on a
# window whose slowest request is under the SLO, and the probe gets what a steady pass needs.
ON_THE_SLO = 0.8


def on_the_slo(state: Modelled, rate: float) -> bool:
    """The modelled percentile at `rate` is within ON_THE_SLO of the SLO (False without a model)."""
    slo = state.plan.slo
    if state.model is None or rate >= state.model.capacity:
        return state.model is not None
    return state.model.percentile_s(rate, slo.percentile) * 1000.0 >= ON_THE_SLO * slo.ms
