"""The saturation search: open-loop probes at one batch, grown then bisected, each judged by the goodput test.

A probe passes when its `scheduled` percentile (intended send → last byte, so a stalled server cannot hide
behind a slowed client) is under the SLO and its errors (unsent requests included) are under the error limit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.results.schema import LoadPointRecord
from bench.sizing.budget import BudgetSpent
from bench.sizing.slo import Slo, passes, sig3

# Measurements the search expects per probe: a failing probe is measured again (judge_probe), about half fail.
MEASUREMENTS_PER_PROBE = 1.5
# Achieved requests/s at one offered rate falling by more than this (and by more than 3 Poisson standard deviations
# of the two counts) between two measurements: the server's capacity changed between them.
CAPACITY_DROP = 0.10


@dataclass
class Probe:
    rate: float  # offered requests/s
    point: LoadPointRecord  # the measurement whose verdict is the probe's (the last one taken)
    passed: bool
    # A probe that failed is measured again before the search moves down (one unlucky probe on a busy machine
    # capped the saturation rate 33% low), and when the two disagree a third decides: `earlier` holds the
    # measurements before `point`, in order (empty: measured once).
    earlier: list[LoadPointRecord] = field(default_factory=list)
    # The answer's rate measured once more after the search (`SearchRules.confirm`): a capacity that
    # changed while the server was probed shows as this failing, or answering less; it does not change the verdict.
    confirmation: LoadPointRecord | None = None
    # that confirmation's verdict: a rate that passed and then failed is on the SLO's edge (or the capacity changed)
    # and does not stand as the answer; None: not measured again
    confirmed: bool | None = None
    # why `point` failed although its percentile met the SLO: its queue was not steady (Unsteady)
    unsteady: str | None = None
    # why `point` passed but does not stand: the budget cut its warm-up or window shorter than a steady verdict
    # needs, so it is neither a pass nor a failure (Doubt.fails False)
    unconfirmed: str | None = None

    @property
    def stands(self) -> bool:
        """Passed on a steady window, and not failed when measured again at the end."""
        return self.passed and self.confirmed is not False and self.unconfirmed is None

    @property
    def failed(self) -> bool:
        """Failed, or passed and then failed when measured again at the end: it bounds the answer from above."""
        return not self.passed or self.confirmed is False

    @property
    def measured(self) -> int:
        return len(self.earlier) + 1


@dataclass
class Saturation:
    rate: float | None  # highest passing offered rate (requests/s); None: no probed rate met the SLO
    point: LoadPointRecord | None  # the probe at that rate
    first_failure: float | None  # lowest failing rate above it (None: never failed: the search hit its probe limit)
    probes: list[Probe] = field(default_factory=list)
    # why `rate` is only a lower bound: the search ended early (budget, signal) or never found a failing rate
    lower_bound: str | None = None
    capacity_changes: list[str] = field(default_factory=list)  # capacity_changes(probes)
    stopped: str | None = None  # why the search ended before `tolerance`: the answer is [rate, first_failure]
    # rates between `rate` and `first_failure` that passed on a window the budget cut short: unconfirmed
    unconfirmed: list[float] = field(default_factory=list)


def saturation_from(probes: list[Probe], stopped: str | None = None) -> Saturation:
    """The answer the probes give: the highest rate that stands (passed on a steady window, and did not fail its
    confirmation) and the lowest one above it that failed; `stopped` says why the search ended before it was done
    (then the answer is the interval between them, or a lower bound while no rate failed). A pass on a window the
    budget cut short is neither: it is said as unconfirmed, between the two."""
    passed = [p for p in probes if p.stands]
    best = max(passed, key=lambda p: p.rate, default=None)
    above = [p.rate for p in probes if p.failed and (best is None or p.rate > best.rate)]
    first_failure = min(above, default=None)
    unconfirmed = sorted(
        p.rate
        for p in probes
        if p.unconfirmed is not None
        and not p.failed
        and (best is None or p.rate > best.rate)
        and (first_failure is None or p.rate < first_failure)
    )
    # A failing rate above the best bounds the answer from above whatever stopped the search: an interval, not a
    # lower bound. Only without one is the best so far a lower bound (stopped early, or no rate failed).
    lower_bound = None
    if first_failure is None:
        unfailed = (
            "no rate failed; the passes above it were on windows the budget cut short (unconfirmed)"
            if unconfirmed
            else "no failing rate found within the probe limit"
        )
        lower_bound = stopped or (unfailed if best is not None else None)
    return Saturation(
        rate=best.rate if best else None,
        point=best.point if best else None,
        first_failure=first_failure,
        probes=list(probes),
        lower_bound=lower_bound if best is not None else stopped,
        capacity_changes=capacity_changes(probes),
        stopped=stopped,
        unconfirmed=unconfirmed,
    )


@dataclass(frozen=True)
class Doubt:
    """Why a measurement's pass does not stand for the steady state."""

    text: str
    # True: its queue was not steady (still growing, too few independent stretches): a failure. False: the budget
    # cut its window short of what a steady verdict needs: neither a pass nor a failure (Probe.unconfirmed).
    fails: bool = True


Unsteady = Callable[[LoadPointRecord], Doubt | None]  # why a measurement does not stand (None: it does)


def judge_probe(
    measure: Callable[[float], LoadPointRecord],
    rate: float,
    slo: Slo,
    into: list[Probe] | None = None,
    unsteady: Unsteady = lambda point: None,
) -> Probe:
    """One probe's verdict: the goodput criterion on its `scheduled` percentile and errors. A failing probe is
    measured once more; when the second measurement passes, a third decides — the majority of three, so that a
    rate whose verdict flips with the neighbours' load is judged by what it does most often, not by whichever
    measurement came last (which passed a rate that fails two times in three half the time). The search and
    any sweep it is checked against (benchmarks/bench_sizing.py) judge a rate by this one function. With `into`,
    the probe is appended after its first measurement and updated with each re-measure, so a stop in between
    keeps what was measured. A measurement whose queue was still growing (`unsteady`) fails whatever its
    percentile: its verdict does not stand for the steady state."""
    first = measure(rate)
    probe = Probe(rate, first, False)
    _judge(probe, first, slo, unsteady)
    if into is not None:
        into.append(probe)
    verdicts = [probe.passed]
    while not verdicts[0] and probe.measured < 3 and verdicts.count(False) < 2:
        _judge(probe, measure(rate), slo, unsteady, remeasure=True)
        verdicts.append(probe.passed)
    return probe


def _judge(probe: Probe, point: LoadPointRecord, slo: Slo, unsteady: Unsteady, remeasure: bool = False) -> None:
    """`point` becomes the probe's verdict (with `remeasure`, the one before moves to `earlier`); the probe changes
    only once the verdict is known, so a stop while it is judged leaves it whole for adopt_measured."""
    doubt = unsteady(point)
    if remeasure:
        probe.earlier.append(probe.point)
    probe.point = point
    probe.unsteady = doubt.text if doubt is not None and doubt.fails else None
    probe.unconfirmed = doubt.text if doubt is not None and not doubt.fails else None
    probe.passed = probe.unsteady is None and passes(point, slo, "scheduled")


def measurements_left(good: float | None, bad: float | None, tolerance: float, growth: float, probes_left: int) -> int:
    """Measurements the search still expects, this one included: until a rate fails (or passes) one more probe,
    then a bisection halving the gap to `tolerance`; a failing probe measured again about half the time."""
    gap = (bad - good) / good if good is not None and bad is not None else growth - 1
    probes = (0 if good is not None and bad is not None else 1) + max(0, math.ceil(math.log2(gap / tolerance)))
    return max(1, math.ceil(min(probes, probes_left) * MEASUREMENTS_PER_PROBE)) + 1  # + the answer's confirmation


@dataclass(frozen=True)
class SearchRules:
    """How the search moves: ×`growth` from its start until a probe fails (or ÷ until one passes, not below
    `min_rate`), then bisection until the failing rate is within `tolerance` of the passing one, or `max_probes`
    are spent; with `confirm`, the answer's rate measured once more at the end."""

    tolerance: float = 0.05
    max_probes: int = 12
    growth: float = 2.0
    min_rate: float = 0.01
    confirm: bool = True


@dataclass
class _Bracket:
    good: float | None = None  # the highest rate passed so far
    bad: float | None = None  # the lowest rate failed so far

    def midpoint(self, tolerance: float) -> float | None:
        """Where to probe next: halfway while the failing rate is more than `tolerance` above the passing one."""
        if self.good is None or self.bad is None or (self.bad - self.good) / self.good <= tolerance:
            return None
        return (self.good + self.bad) / 2


def saturation_search(
    measure: Callable[[float], LoadPointRecord],
    start_rate: float,
    slo: Slo,
    rules: SearchRules = SearchRules(),
    probes: list[Probe] | None = None,
    outlook: Callable[[int], None] = lambda measurements: None,
    unsteady: Unsteady = lambda point: None,
) -> Saturation:
    """The search of `rules` from `start_rate`. A failing probe is re-measured (`judge_probe`; not counted against
    `max_probes`); `unsteady` fails a measurement whose queue was still growing. The probes go into `probes` (the
    caller's list, kept when a budget or a signal stops the search); before each, `outlook` hears how many
    measurements the search still expects (the caller sizes its probes and its time estimate by it). The answer's
    confirmation is measured when the budget allows: a failure or a fall in achieved throughput then is a capacity
    change between probes (`capacity_changes`)."""
    probes = [] if probes is None else probes
    bracket = _Bracket()

    def probe(rate: float) -> bool:
        left = rules.max_probes - len(probes)
        outlook(measurements_left(bracket.good, bracket.bad, rules.tolerance, rules.growth, left))
        # A pass on a window cut short moves the search down like a failure (above it the budget holds still less
        # of what a steady verdict needs), though it is none: no re-measure, and the answer says it as unconfirmed.
        passed = judge_probe(measure, rate, slo, into=probes, unsteady=unsteady).stands
        if passed:
            bracket.good = rate
        else:
            bracket.bad = rate
        return passed

    rate = start_rate
    if probe(rate):
        while len(probes) < rules.max_probes:
            rate *= rules.growth
            if not probe(rate):
                break
    else:
        while len(probes) < rules.max_probes and rate / rules.growth >= rules.min_rate:
            rate /= rules.growth
            if probe(rate):
                break
    while len(probes) < rules.max_probes and (mid := bracket.midpoint(rules.tolerance)) is not None:
        probe(mid)
    if rules.confirm:
        _confirm_answer(probes, measure, slo, outlook, unsteady)
    return saturation_from(probes)


def _confirm_answer(
    probes: list[Probe],
    measure: Callable[[float], LoadPointRecord],
    slo: Slo,
    outlook: Callable[[int], None],
    unsteady: Unsteady,
) -> None:
    """The answer's rate measured once more (after more than one probe), when the budget still holds it."""
    answer = max((p for p in probes if p.stands), key=lambda p: p.rate, default=None)
    if answer is None or len(probes) <= 1:
        return
    try:
        outlook(1)
        _confirm(answer, measure(answer.rate), slo, unsteady)
    except BudgetSpent:  # the answer stands; only its check did not fit
        pass


def _confirm(answer: Probe, point: LoadPointRecord, slo: Slo, unsteady: Unsteady) -> None:
    answer.confirmation = point
    doubt = unsteady(point)
    answer.confirmed = passes(point, slo, "scheduled") and (doubt is None or not doubt.fails)


def adopt_measured(probes: list[Probe], points: list[LoadPointRecord], slo: Slo, unsteady: Unsteady) -> None:
    """Join to `probes` the search's `points` (open loop, in order) that no probe holds yet: a signal between a
    point being written and its probe being updated would otherwise leave a measured point out of the answer. A
    point at the last probe's rate while that probe awaited a re-measure (judge_probe's majority rule) is that
    re-measure; one at a passing probe's rate after the search is its confirmation; any other is a new probe."""
    held = {id(m) for p in probes for m in (*p.earlier, p.point, p.confirmation) if m is not None}
    for point in points:
        if id(point) in held:
            continue
        last = probes[-1] if probes else None
        awaiting = last is not None and (last.measured, last.passed) in ((1, False), (2, True))
        answer = next((p for p in probes if p.rate == point.rate and p.passed and p.confirmation is None), None)
        if last is not None and awaiting and last.rate == point.rate:
            _judge(last, point, slo, unsteady, remeasure=True)
        elif answer is not None:
            _confirm(answer, point, slo, unsteady)
        else:
            probe = Probe(point.rate or 0.0, point, False)
            _judge(probe, point, slo, unsteady)
            probes.append(probe)


def capacity_changes(probes: list[Probe]) -> list[str]:
    """Signs that the server's capacity changed while it was probed (another tenant, a throttled GPU): the answer's
    rate failing when measured again at the end (it then does not stand as the answer), or a measurement whose
    achieved requests/s fell well below the one before it at the same offered rate (by more than CAPACITY_DROP and
    3 Poisson deviations). A re-measure that flips (failed, passed, failed) is the majority rule's business, said
    by `remeasured_text`: at a rate on the SLO's edge it is noise."""
    found: list[str] = []
    for probe in probes:
        if probe.confirmed is False:
            found.append(
                f"{sig3(probe.rate)} requests/s offered passed, then failed when measured again at the end (the "
                "capacity changed, or the rate sits on the SLO's edge): it does not stand as the answer"
            )
        measured = [*probe.earlier, probe.point, *([probe.confirmation] if probe.confirmation else [])]
        for before, after in itertools.pairwise(measured):
            drop = _throughput_drop(before, after)
            if drop is not None:
                found.append(
                    f"at {sig3(probe.rate)} requests/s offered, the achieved rate fell from "
                    f"{sig3(before.throughput.requests_per_s)} to {sig3(after.throughput.requests_per_s)} "
                    f"requests/s ({drop:.0%} less)"
                )
    return found


def _throughput_drop(before: LoadPointRecord, after: LoadPointRecord) -> float | None:
    """The fall of achieved requests/s from `before` to `after`, when past CAPACITY_DROP and Poisson noise."""
    r1, r2 = before.throughput.requests_per_s, after.throughput.requests_per_s
    t1, t2 = before.duration_s, after.duration_s
    if r1 <= 0 or t1 <= 0 or t2 <= 0:
        return None
    noise = 3 * math.sqrt(r1 / t1 + r2 / t2)  # the deviation of a difference of two Poisson rates
    fall = r1 - r2
    return fall / r1 if fall > CAPACITY_DROP * r1 and fall > noise else None


def remeasured_text(probes: list[Probe]) -> str:
    """`; re-measured after failing: 40/s (failed again), 30/s (passed, then failed), 20/s (passed twice)`, or ""
    when no probe failed."""
    again = [f"{sig3(p.rate)}/s ({_remeasure_outcome(p)})" for p in probes if p.earlier]
    return f"; re-measured after failing: {', '.join(again)}" if again else ""


def _remeasure_outcome(probe: Probe) -> str:
    if probe.measured == 2:
        return "failed again"
    return "passed twice" if probe.passed else "passed, then failed"
