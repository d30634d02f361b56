"""The saturation search: open-loop probes at one batch, grown then bisected, each judged by the goodput test.

A probe passes when its `scheduled` percentile (intended send → last byte, so a stalled server cannot hide
behind a slowed client) is under the SLO and its errors (unsent requests included) are under the error limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.results.schema import LoadPointRecord
from bench.sizing.budget import BudgetSpent
from bench.sizing.changes import capacity_changes
from bench.sizing.changes import remeasured_text as remeasured_text  # re-exported: the recommendation's import
from bench.sizing.probe import CARRIED_SHORT as CARRIED_SHORT  # re-exported, as the names below: their old home
from bench.sizing.probe import Doubt as Doubt
from bench.sizing.probe import Probe as Probe
from bench.sizing.probe import Undecided as Undecided
from bench.sizing.probe import Unsteady as Unsteady
from bench.sizing.probe import confirm_with, judge_probe
from bench.sizing.probe import judge_measurement as judge_measurement
from bench.sizing.probe import sent_share as sent_share
from bench.sizing.slo import Slo

# Measurements the search expects per probe: a failing probe is measured again (judge_probe), about half fail.
MEASUREMENTS_PER_PROBE = 1.5
MAX_RESTARTS = 2  # a capacity that collapses again and again: the answer says so after this many restarts


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
    # rates above `rate` (below `first_failure`) whose interval straddled the SLO, or whose window the machine could
    # not carry: neither a pass nor a failure
    inconclusive: list[float] = field(default_factory=list)
    too_busy: list[float] = field(default_factory=list)


def saturation_from(probes: list[Probe], stopped: str | None = None) -> Saturation:
    """The answer the probes give: the highest rate that stands (passed on a steady window, and did not fail its
    confirmation) and the lowest one above it that failed; `stopped` says why the search ended before it was done
    (then the answer is the interval between them, or a lower bound while no rate failed). A pass on a window the
    budget cut short is neither: it is said as unconfirmed, between the two."""
    # After a restart (the capacity collapsed) only the probes since stand for what is measured now.
    latest = max((p.epoch for p in probes), default=0)
    now = [p for p in probes if p.epoch == latest]
    best = max((p for p in now if p.stands), key=lambda p: p.judged_rate, default=None)
    low = best.judged_rate if best is not None else -math.inf
    first_failure = min((p.judged_rate for p in now if p.failed and p.judged_rate > low), default=None)

    def between(kind: Callable[[Probe], bool]) -> list[float]:
        high = math.inf if first_failure is None else first_failure
        return sorted(p.judged_rate for p in now if kind(p) and not p.failed and low < p.judged_rate < high)

    unconfirmed = between(lambda p: p.unconfirmed is not None)
    inconclusive = between(lambda p: p.inconclusive is not None)
    # A failing rate above the best bounds the answer from above whatever stopped the search: an interval, not a
    # lower bound. Only without one is the best so far a lower bound (stopped early, or no rate failed); and with no
    # pass there is no lower bound at all: the answer is under the lowest failure (or not known), said as such.
    lower_bound = None
    if first_failure is None and best is not None:
        unfailed = (
            "no rate failed; the passes above it were on windows the budget cut short (unconfirmed)"
            if unconfirmed
            else "no rate failed; the rates above it were inconclusive"
            if inconclusive
            else "no failing rate found within the probe limit"
        )
        lower_bound = stopped or unfailed
    return Saturation(
        rate=best.judged_rate if best else None,
        point=best.point if best else None,
        first_failure=first_failure,
        probes=list(probes),
        lower_bound=lower_bound,
        capacity_changes=capacity_changes(probes),
        stopped=stopped,
        unconfirmed=unconfirmed,
        inconclusive=inconclusive,
        too_busy=between(lambda p: p.too_busy is not None),
    )


def measurements_left(good: float | None, bad: float | None, tolerance: float, growth: float, probes_left: int) -> int:
    """Measurements the search still expects, this one included: until a rate fails (or passes) one more probe,
    then a bisection halving the gap to `tolerance`; a failing probe measured again about half the time."""
    gap = (bad - good) / good if good is not None and bad is not None else growth - 1
    probes = (0 if good is not None and bad is not None else 1) + max(
        0, math.ceil(math.log2(max(gap, tolerance) / tolerance))
    )
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
    # an undecided measurement is measured again while this says another window may decide it (judge_probe)
    extend: Callable[[LoadPointRecord], bool] = lambda point: True
    majority: bool = True  # a failure measured again, the majority of up to three deciding (judge_probe)


@dataclass
class _Bracket:
    passed: list[float] = field(default_factory=list)  # rates that stand
    other: list[float] = field(default_factory=list)  # rates failed, undecided or passed on a cut window

    @property
    def good(self) -> float | None:
        """The highest rate passed so far."""
        return max(self.passed, default=None)

    @property
    def bad(self) -> float | None:
        """The lowest rate above it that did not stand (a pass above an undecided rate leaves that rate out)."""
        good = self.good
        return min((r for r in self.other if good is None or r > good), default=None)

    def midpoint(self, tolerance: float) -> float | None:
        """Where to probe next: halfway while the failing rate is more than `tolerance` above the passing one."""
        if self.good is None or self.bad is None or (self.bad - self.good) / self.good <= tolerance:
            return None
        return (self.good + self.bad) / 2


Restart = Callable[[Probe], float | None]  # a probe that shows the capacity collapsed: the rate to start again from


def saturation_search(
    measure: Callable[[float], LoadPointRecord],
    start_rate: float,
    slo: Slo,
    rules: SearchRules = SearchRules(),
    probes: list[Probe] | None = None,
    outlook: Callable[[int], None] = lambda measurements: None,
    unsteady: Unsteady = lambda point: None,
    restart: Restart = lambda probe: None,
    lower: Callable[[float], float] | None = None,
) -> Saturation:
    """The search of `rules` from `start_rate`. A failing probe is re-measured (`judge_probe`; not counted against
    `max_probes`); `unsteady` fails a measurement whose queue was still growing. The probes go into `probes` (the
    caller's list, kept when a budget or a signal stops the search); before each, `outlook` hears how many
    measurements the search still expects (the caller sizes its probes and its time estimate by it). When `restart`
    says a probe saw the capacity collapse (what the closed loop carried, the server no longer does), the search
    starts again from the rate it gives, up to MAX_RESTARTS times: the probes before are not the answer. The answer's
    confirmation is measured when the budget allows: a failure or a fall in achieved throughput then is a capacity
    change between probes (`capacity_changes`)."""
    probes = [] if probes is None else probes
    rate: float | None = start_rate
    for epoch in range(MAX_RESTARTS + 1):
        assert rate is not None
        step = _Steps(restart, lower or (lambda r: r / rules.growth))
        rate = _search_from(measure, rate, slo, rules, probes, outlook, unsteady, step, epoch)
        if rate is None:
            break
    if rules.confirm:
        _confirm_answer(probes, measure, slo, outlook, unsteady)
    return saturation_from(probes)


@dataclass(frozen=True)
class _Steps:
    restart: Restart  # the rate to start again from when a probe saw the capacity collapse
    lower: Callable[[float], float]  # the next rate down


class _Collapsed(Exception):
    def __init__(self, rate: float):
        self.rate = rate


@dataclass
class _Walk:
    """One search's state: the probes it made (`mine`), the bracket they set, and the rates above which the
    budget holds less (failed outright, or passed on a window cut short)."""

    measure: Callable[[float], LoadPointRecord]
    slo: Slo
    rules: SearchRules
    probes: list[Probe]
    outlook: Callable[[int], None]
    unsteady: Unsteady
    step: _Steps
    epoch: int
    bracket: _Bracket = field(default_factory=_Bracket)
    mine: int = 0
    failed: list[float] = field(default_factory=list)
    cut: list[float] = field(default_factory=list)

    def left(self) -> bool:
        return self.mine < self.rules.max_probes

    def probe(self, rate: float) -> Probe:
        rules, bracket = self.rules, self.bracket
        self.outlook(
            measurements_left(bracket.good, bracket.bad, rules.tolerance, rules.growth, rules.max_probes - self.mine)
        )
        judged = judge_probe(
            self.measure,
            rate,
            self.slo,
            self.probes,
            self.unsteady,
            epoch=self.epoch,
            majority=rules.majority,
            extend=rules.extend,
        )
        self.mine += 1
        again = self.step.restart(judged) if self.epoch < MAX_RESTARTS else None
        if again is not None:
            raise _Collapsed(again)
        # a failure, a pass on a window cut short or an undecided rate: the search moves down from it
        (bracket.passed if judged.stands else bracket.other).append(rate)
        if judged.failed or judged.unconfirmed is not None:  # above a cut window the budget holds still less
            (self.failed if judged.failed else self.cut).append(rate)
        return judged

    def climb(self, rate: float) -> None:  # up until a rate fails outright (or passes on a cut window)
        while self.left() and not (judged := self.probe(rate := rate * self.rules.growth)).failed:
            if judged.unconfirmed is not None:
                break


def _search_from(
    measure: Callable[[float], LoadPointRecord],
    start_rate: float,
    slo: Slo,
    rules: SearchRules,
    probes: list[Probe],
    outlook: Callable[[int], None],
    unsteady: Unsteady,
    step: _Steps,
    epoch: int,
) -> float | None:
    """One search from `start_rate` (the probes of this `epoch`); the rate to restart from when the capacity
    collapsed, else None. From a start that did not pass, down first to a pass (the answer's lower end, which the
    user sizes by); then, while no rate above it failed outright, up from the highest rate that did not fail until
    one does (the upper end: failures far above the truth end early and cost little). Undecided probes move the
    search like failures below them (a verdict there needs more than the probe had) but bound nothing."""
    walk = _Walk(measure, slo, rules, probes, outlook, unsteady, step, epoch)
    bracket = walk.bracket
    try:
        rate = start_rate
        if walk.probe(rate).stands:
            walk.climb(rate)
        while walk.left() and bracket.good is None and step.lower(rate) >= rules.min_rate:
            walk.probe(rate := step.lower(rate))  # down until one passes
        low = bracket.good if bracket.good is not None else 0.0
        if not any(r > low for r in walk.failed + walk.cut):  # no upper end yet: up from the highest undecided rate
            walk.climb(max((r for r in bracket.other if r > low), default=max(low, start_rate)))
        while walk.left() and (mid := bracket.midpoint(rules.tolerance)) is not None:
            walk.probe(mid)
    except _Collapsed as collapsed:
        return collapsed.rate
    return None


def _confirm_answer(
    probes: list[Probe],
    measure: Callable[[float], LoadPointRecord],
    slo: Slo,
    outlook: Callable[[int], None],
    unsteady: Unsteady,
) -> None:
    """The answer's rate measured once more (after more than one probe), when the budget still holds it."""
    latest = max((p.epoch for p in probes), default=0)  # after a restart, the answer of what is measured now
    answer = max((p for p in probes if p.stands and p.epoch == latest), key=lambda p: p.judged_rate, default=None)
    if answer is None or len(probes) <= 1:
        return
    try:
        outlook(1)
        confirm_with(answer, measure(answer.rate), slo, unsteady)
    except BudgetSpent:  # the answer stands; only its check did not fit
        pass
