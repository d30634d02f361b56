"""The recommended combination of a sweep: the fastest that lost no document and met no refusal from the embedder."""

from __future__ import annotations

from bench.results.schema import IngestPointRecord, IngestStatus, IngestSummaryRecord

REFUSALS = ("429", "413", "422", "5xx")


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
    best = max(clean, key=lambda p: p.docs_per_s or 0.0)
    slowest = min(clean, key=lambda p: p.docs_per_s or 0.0)
    reason = (
        f"{best.docs_per_s:.3g} docs/s with 0 lost documents and 0 refused calls: the fastest of the {len(clean)} "
        f"combination(s) that lost nothing (slowest {slowest.docs_per_s:.3g} docs/s, {slowest.label})"
    )
    return IngestSummaryRecord(target=target, recommended=best.label, reason=reason + note)
