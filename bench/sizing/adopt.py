"""Points measured but not yet taken by a probe when a signal stopped the search: joined to the answer."""

from __future__ import annotations

from bench.results.schema import LoadPointRecord
from bench.sizing.probe import Probe, Unsteady, confirm_with, judge_measurement
from bench.sizing.slo import Slo


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
        awaiting = last is not None and (last.undecided or (last.measured, last.passed) in ((1, False), (2, True)))
        answer = next((p for p in probes if p.rate == point.rate and p.passed and p.confirmation is None), None)
        if last is not None and awaiting and last.rate == point.rate:
            judge_measurement(last, point, slo, unsteady, remeasure=True)
        elif answer is not None:
            confirm_with(answer, point, slo, unsteady)
        else:
            probe = Probe(point.rate or 0.0, point, False, epoch=probes[-1].epoch if probes else 0)
            judge_measurement(probe, point, slo, unsteady)
            probes.append(probe)
