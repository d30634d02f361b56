"""`size`'s answer as the terminal says it: each sizing record's lines, what a best-so-far answer is, and the line
of a budget that sized nothing (bench/commands/size.py and size_trace.py)."""

from __future__ import annotations

from bench.results.schema import SaturationSummary
from bench.results.store import Results
from bench.sizing.slo import sig3


def nothing_measured(max_time_s: float | None) -> str:
    """A budget spent before the first probe ended sized nothing: exit 3, not the 0 of a budget that answered."""
    spent = f"--max-time {sig3(max_time_s)} s" if max_time_s is not None else "the run"
    return f"size: {spent} ended before any probe was measured: nothing sized; give it more time"


def show_sizing(results: Results) -> None:
    """Each sizing record's lines, as the terminal shows them."""
    for record in results.sizing:
        slo = f"p{record.slo_percentile or 99:g} SLO {sig3(record.slo_p99_ms)} ms"
        sat = record.saturation
        best = f" — best so far ({record.stopped}): {answer_kind(sat)}" if record.stopped else ""
        print(f"\n{record.endpoint} ({record.op}, length {record.length_text}), {slo}{best}:")
        for line in record.lines:
            print(f"  {line.setting}: {line.value} — {line.why}")
        if sat is not None and sat.tighter:
            print(f"  {sat.tighter}")


def answer_kind(sat: SaturationSummary | None) -> str:
    """What a best-so-far answer is: an interval, a lower bound, or — with no pass — an upper bound (never "none yet"
    under "a lower bound")."""
    if sat is not None and sat.rate is None:
        return "no rate passed" + (f": below {sig3(sat.first_failure)} requests/s" if sat.first_failure else "")
    if sat is not None and sat.lower_bound is None and sat.first_failure is not None:
        return "the interval between the highest steady pass and the lowest failure"
    return "a lower bound"
