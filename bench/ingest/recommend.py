"""The recommended combination of a sweep: among those that lost no document and met no refusal from the embedder,
the one that asks the least of the embedder (fewest calls, then fewest in flight) within TIE of the fastest: one
run per combination cannot tell closer rates apart, and the gentler setting leaves the embedder room."""

from __future__ import annotations

from bench.endpoints.meter_calls import REFUSALS
from bench.results.schema import IngestPointRecord, IngestStatus, IngestSummaryRecord

TIE = 0.10  # rates within 10% of the fastest count as equal


def refusals(point: IngestPointRecord) -> int:
    """Calls the embedder refused (rate, size or server errors), over every metered route."""
    return sum(calls.by_status.get(kind, 0) for calls in point.calls.values() for kind in REFUSALS)


def recommend(target: str, points: list[IngestPointRecord]) -> IngestSummaryRecord:
    measured = [p for p in points if p.status != IngestStatus.FAILED and p.docs_per_s]
    clean = [p for p in measured if p.status == IngestStatus.OK and refusals(p) == 0]
    troubled = [p for p in measured if p not in clean]
    note = ""
    if troubled:
        shown = "; ".join(f"{p.label}: {p.failed + p.lost} lost, {refusals(p)} refused calls" for p in troubled[:3])
        note = f"; {len(troubled)} lost documents or met refusals ({shown})"
    if not clean:
        why = "no combination ingested every document without a refused call" if measured else "nothing was measured"
        return IngestSummaryRecord(target=target, recommended=None, reason=why + note)
    fastest = max(clean, key=lambda p: p.docs_per_s or 0.0)
    top = fastest.docs_per_s or 0.0
    tied = [p for p in clean if (p.docs_per_s or 0.0) >= (1 - TIE) * top]
    best = min(tied, key=lambda p: (_calls(p), _peak(p), -(p.docs_per_s or 0.0)))
    slowest = min(clean, key=lambda p: p.docs_per_s or 0.0)
    reason = f"{best.docs_per_s:#.3g} docs/s, 0 lost documents, 0 refused calls"
    if best is fastest:
        reason += f": the fastest of the {len(clean)} combination(s) that lost nothing"
    else:
        reason += (
            f", {_calls(best)} embedder calls (peak {_peak(best)} in flight): within {TIE:.0%} of the fastest "
            f"({fastest.label}: {top:#.3g} docs/s, {_calls(fastest)} calls, peak {_peak(fastest)}) with fewer calls"
        )
    reason += f"; slowest {slowest.docs_per_s:#.3g} docs/s ({slowest.label})"
    return IngestSummaryRecord(target=target, recommended=best.label, reason=reason + note)


def _calls(point: IngestPointRecord) -> int:
    return sum(c.calls for c in point.calls.values())


def _peak(point: IngestPointRecord) -> int:
    return max((c.peak_in_flight for c in point.calls.values()), default=0)
