"""One probe of the saturation search: its measurements, and the verdict each gives (pass, failure, or neither).

A probe passes when its `scheduled` percentile (intended send → last byte, so a stalled server cannot hide behind a
slowed client) is under the SLO and its errors (unsent requests included) are under the error limit; a measurement
whose percentile's interval straddles the SLO, or whose window the client could not carry, is neither (issue 45).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from bench.load.points import carried_rate
from bench.results.schema import LoadPointRecord
from bench.sizing.slo import Slo, passes

# A probe whose window carried more than this share less than its label is judged at the rate it carried (issue 45:
# a probe labelled 1.71/s sent 1.40/s): a verdict at a rate is a verdict at the rate the endpoint was given.
CARRIED_SHORT = 0.05
# An undecided measurement (its interval straddles the SLO, or the machine was too busy) is measured again, each time
# over a longer window while the budget allows, at most this many times before the probe stays undecided.
MAX_EXTENSIONS = 1


@dataclass
class Probe:
    rate: float  # offered requests/s
    point: LoadPointRecord  # the measurement whose verdict is the probe's (the last one taken)
    passed: bool
    # A probe that failed is measured again before the search moves down (one unlucky probe on a busy machine
    # capped the saturation rate 33% low), and when the two disagree a third decides: `earlier` holds the
    # measurements before `point`, in order (empty: measured once).
    earlier: list[LoadPointRecord] = field(default_factory=list)
    # what each measurement in `earlier` was, in order: "failed", or why it was undecided ("too busy", "inconclusive")
    outcomes: list[str] = field(default_factory=list)
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
    # why `point` is neither a pass nor a failure: its percentile's 95% interval straddles the SLO (Undecided)
    inconclusive: str | None = None
    # why `point` is the machine's, not the endpoint's: the client could not carry its window (machine_too_busy)
    too_busy: str | None = None
    carried: float | None = None  # requests/s `point`'s window carried (None: not recorded)
    collapse: str | None = None  # why the search restarted after this probe: the capacity collapsed
    epoch: int = 0  # the search's restarts before it: a capacity that collapsed restarts the search (Restart)

    @property
    def undecided(self) -> bool:
        """Inconclusive, or the machine's: neither a pass nor a failure of the endpoint."""
        return self.inconclusive is not None or self.too_busy is not None

    @property
    def judged_rate(self) -> float:
        """The rate its verdict is at: the label, or the label × the share of its scheduled sends the client sent when
        that share is CARRIED_SHORT under 1 (the client fell behind). Sent over scheduled, not over the label: a window
        ended early holds a count of its own (a Poisson schedule's sends before the cut), which is no lateness."""
        share = sent_share(self.point)
        return self.rate * share if share is not None and share < 1.0 - CARRIED_SHORT else self.rate

    @property
    def stands(self) -> bool:
        """Passed on a steady window, and not failed when measured again at the end."""
        return self.passed and self.confirmed is not False and self.unconfirmed is None

    @property
    def failed(self) -> bool:
        """Failed (decidedly: not undecided), or passed and then failed when measured again at the end: it bounds the
        answer from above."""
        return (not self.passed and not self.undecided) or self.confirmed is False

    @property
    def measured(self) -> int:
        return len(self.earlier) + 1


def sent_share(point: LoadPointRecord) -> float | None:
    """The share of the sends its window scheduled that the client sent (None: not an open loop, or none due)."""
    scheduled = point.requests.scheduled
    return point.requests.sent / scheduled if scheduled else None


class Undecided(Enum):
    """Why a measurement is neither a pass nor a failure."""

    SHORT = "short"  # the budget cut its window short of a steady verdict's need (Probe.unconfirmed)
    INCONCLUSIVE = "inconclusive"  # its percentile's interval straddles the SLO (Probe.inconclusive)
    BUSY = "busy"  # the client could not carry its window: the machine's, not the endpoint's (Probe.too_busy)


@dataclass(frozen=True)
class Doubt:
    """Why a measurement's verdict does not stand for the steady state."""

    text: str
    # True: its queue was not steady (still growing, too few independent stretches): a failure. False: neither a
    # pass nor a failure, for the reason `undecided` says.
    fails: bool = True
    undecided: Undecided = Undecided.SHORT


Unsteady = Callable[[LoadPointRecord], Doubt | None]  # why a measurement does not stand (None: it does)


def judge_probe(
    measure: Callable[[float], LoadPointRecord],
    rate: float,
    slo: Slo,
    into: list[Probe] | None = None,
    unsteady: Unsteady = lambda point: None,
    epoch: int = 0,
    majority: bool = True,
    extend: Callable[[LoadPointRecord], bool] = lambda point: True,
) -> Probe:
    """One probe's verdict: the goodput criterion on its `scheduled` percentile and errors. A failing probe is
    measured once more; when the second measurement passes, a third decides — the majority of three, so that a
    rate whose verdict flips with the neighbours' load is judged by what it does most often, not by whichever
    measurement came last (which passed a rate that fails two times in three half the time). The search and
    any sweep it is checked against (benchmarks/bench_sizing.py) judge a rate by this one function. With `into`,
    the probe is appended after its first measurement and updated with each re-measure, so a stop in between
    keeps what was measured. A measurement whose queue was still growing (`unsteady`) fails whatever its
    percentile: its verdict does not stand for the steady state. A measurement that is undecided — its interval
    straddles the SLO, or the machine could not carry its window — is neither: measured again (the session gives
    it a longer window) up to MAX_EXTENSIONS times while `extend` says more may decide it, then the probe stays
    undecided. Without `majority` a failure
    stands as measured: where `unsteady` says a failure whose interval reaches under the SLO, or whose window the
    client could not carry, is undecided, every failure left is decided (the session's search)."""
    first = measure(rate)
    probe = Probe(rate, first, False, epoch=epoch)
    judge_measurement(probe, first, slo, unsteady)
    if into is not None:
        into.append(probe)
    decided: list[bool] = []  # the pass/fail verdicts; undecided measurements are extended, MAX_EXTENSIONS times
    extensions = 0
    while True:
        if probe.undecided:
            if extensions >= MAX_EXTENSIONS or not extend(probe.point):
                break
            extensions += 1
        else:
            decided.append(probe.passed)
            if decided[0] or not majority or len(decided) >= 3 or decided.count(False) >= 2:
                break
        probe.outcomes.append(outcome(probe))
        judge_measurement(probe, measure(rate), slo, unsteady, remeasure=True)
    return probe


def outcome(probe: Probe) -> str:
    """What the probe's last measurement was, in a word or two (its re-measures say it: changes.remeasured_text)."""
    if probe.too_busy is not None:
        return "too busy"
    if probe.inconclusive is not None:
        return "inconclusive"
    if probe.unconfirmed is not None:
        return "passed on a cut window"
    return "passed" if probe.passed else "failed"


def judge_measurement(
    probe: Probe, point: LoadPointRecord, slo: Slo, unsteady: Unsteady, remeasure: bool = False
) -> None:
    """`point` becomes the probe's verdict (with `remeasure`, the one before moves to `earlier`); the probe changes
    only once the verdict is known, so a stop while it is judged leaves it whole for adopt_measured."""
    doubt = unsteady(point)
    if remeasure:
        probe.earlier.append(probe.point)
    probe.point = point
    probe.carried = carried_rate(point.requests)
    undecided = doubt.undecided if doubt is not None and not doubt.fails else None
    probe.unsteady = doubt.text if doubt is not None and doubt.fails else None
    probe.unconfirmed = doubt.text if doubt is not None and undecided == Undecided.SHORT else None
    probe.inconclusive = doubt.text if doubt is not None and undecided == Undecided.INCONCLUSIVE else None
    probe.too_busy = doubt.text if doubt is not None and undecided == Undecided.BUSY else None
    probe.passed = probe.unsteady is None and not probe.undecided and passes(point, slo, "scheduled")


def confirm_with(answer: Probe, point: LoadPointRecord, slo: Slo, unsteady: Unsteady) -> None:
    answer.confirmation = point
    doubt = unsteady(point)
    if doubt is not None and not doubt.fails and doubt.undecided != Undecided.SHORT:
        answer.confirmed = None  # inconclusive, or the machine's: it neither confirms the answer nor takes it back
        return
    answer.confirmed = passes(point, slo, "scheduled") and (doubt is None or not doubt.fails)
