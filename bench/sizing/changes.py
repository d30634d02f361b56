"""Signs in a search's probes that the server changed under it, and how its re-measured probes ended."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Protocol

from bench.results.schema import LoadPointRecord
from bench.sizing.slo import sig3


class Probe(Protocol):
    """What these read of a search's probe (bench.sizing.search.Probe)."""

    rate: float
    point: LoadPointRecord
    passed: bool
    earlier: list[LoadPointRecord]
    outcomes: list[str]
    too_busy: str | None
    inconclusive: str | None
    unconfirmed: str | None
    confirmation: LoadPointRecord | None
    confirmed: bool | None
    collapse: str | None

    @property
    def measured(self) -> int: ...


# Achieved requests/s at one offered rate falling by more than this (and by more than 3 Poisson standard deviations
# of the two counts) between two measurements: the server's capacity changed between them.
CAPACITY_DROP = 0.10


def capacity_changes(probes: Sequence[Probe]) -> list[str]:
    """Signs that the server's capacity changed while it was probed (another tenant, a throttled GPU): the answer's
    rate failing when measured again at the end (it then does not stand as the answer), or a measurement whose
    achieved requests/s fell well below the one before it at the same offered rate (by more than CAPACITY_DROP and
    3 Poisson deviations). A re-measure that flips (failed, passed, failed) is the majority rule's business, said
    by `remeasured_text`: at a rate on the SLO's edge it is noise."""
    found: list[str] = [probe.collapse for probe in probes if probe.collapse]
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


def remeasured_text(probes: Sequence[Probe]) -> str:
    """`; re-measured after failing: 40/s (failed again), 30/s (passed, then failed), 20/s (passed twice)`, or ""
    when no probe failed; a probe measured again because it was undecided says so: `; re-measured: 19/s (too busy,
    then passed)` (issue 48: such a probe read `re-measured after failing: 19/s (failed again)`)."""
    failed = [f"{sig3(p.rate)}/s ({_remeasure_outcome(p)})" for p in probes if p.earlier and _after_failing(p)]
    undecided = [f"{sig3(p.rate)}/s ({_undecided_outcome(p)})" for p in probes if p.earlier and not _after_failing(p)]
    return (f"; re-measured after failing: {', '.join(failed)}" if failed else "") + (
        f"; re-measured: {', '.join(undecided)}" if undecided else ""
    )


def _after_failing(probe: Probe) -> bool:
    """Re-measured by the majority rule of judge_probe (first a failure, then passes or failures), no measurement
    undecided."""
    decided = all(o in ("failed", "passed") for o in probe.outcomes[1:])
    undecided = probe.too_busy or probe.inconclusive or probe.unconfirmed
    return probe.outcomes[:1] in ([], ["failed"]) and decided and not undecided


def _undecided_outcome(probe: Probe) -> str:
    last = (
        "too busy"
        if probe.too_busy
        else "inconclusive"
        if probe.inconclusive
        else "passed on a cut window"
        if probe.unconfirmed
        else "passed"
        if probe.passed
        else "failed"
    )
    return ", then ".join([*probe.outcomes, last])


def _remeasure_outcome(probe: Probe) -> str:
    if probe.measured == 2:
        return "failed again"
    return "passed twice" if probe.passed else "passed, then failed"
