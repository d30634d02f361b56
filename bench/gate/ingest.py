"""Ingest checks: per target and settings combination of both runs, its docs/s against the baseline's
(`--min-ingest-ratio`, the flag that gates a quality target's ingest texts/s) and its failed and lost documents.

Documents failed or lost are always gated when ingest points are compared: more than the baseline's fails. A
combination measured in only one run, or that could not be measured in either, is said (an `info` check), not
gated. Targets are paired by their name (`-t NAME=openwebui@URL`, else the spec as written; `--match` for a
renamed one), combinations by their label.
"""

from __future__ import annotations

from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.gate.figures import fmt_num
from bench.results.schema import IngestPointRecord, IngestStatus
from bench.results.store import Results

LOSS_RULE = "more documents failed or lost than the baseline fails"


def docs_per_s(point: IngestPointRecord) -> float | None:
    """The point's docs/s; 0 where it processed no document (everything failed or was lost)."""
    if point.docs_per_s is not None:
        return point.docs_per_s
    return 0.0 if point.processed == 0 and point.documents else None


def _name(target: str, label: str) -> str:
    return f"{target} {label}"


def _not_compared(name: str, source: str, why: str) -> Check:
    return Check(CheckKind.INGEST, source, name, Status.INFO, f"{name}: not gated: {why}", not_gated=why)


def _unmeasured(b: IngestPointRecord, c: IngestPointRecord) -> str:
    """Why a pair of points cannot be compared (empty: both were measured)."""
    return "; ".join(
        f"could not be measured in the {run} run: {p.error or 'no reason recorded'}"
        for run, p in (("baseline", b), ("current", c))
        if p.status == IngestStatus.FAILED
    )


def _ratio_gate(was: float | None, now: float | None, config: GateConfig) -> tuple[float | None, str]:
    """(current ÷ baseline docs/s, why the ratio is not gated: empty when it is)."""
    ratio = now / was if was and now is not None else None
    if config.min_ingest_ratio is None:
        return ratio, "no --min-ingest-ratio"
    if ratio is None:
        return None, "the baseline processed no document" if was == 0 else "no docs/s in one of the runs"
    return ratio, ""


def ingest_check(b: IngestPointRecord, c: IngestPointRecord, name: str, config: GateConfig, source: str) -> Check:
    """Both points measured: docs/s ratio (with the flag) and documents failed or lost (always)."""
    was, now = docs_per_s(b), docs_per_s(c)
    ratio, skipped = _ratio_gate(was, now, config)
    slower = not skipped and ratio is not None and ratio < (config.min_ingest_ratio or 0.0)
    lost_before, lost_now = b.failed + b.lost, c.failed + c.lost
    more_lost = lost_now > lost_before
    summary = (
        f"{name}: docs/s {fmt_num(was, 2)} → {fmt_num(now, 2)} (×{fmt_num(ratio, 3)}), documents failed or lost "
        f"{lost_before} of {b.documents} → {lost_now} of {c.documents} ({LOSS_RULE})"
    )
    if config.min_ingest_ratio is not None:
        summary += f"; min ingest ratio {config.min_ingest_ratio:g}"
    if skipped:
        summary += f"; docs/s not gated: {skipped}"
    figures = {
        "target": c.target,
        "baseline_target": b.target,
        "label": c.label,
        "baseline_docs_per_s": was,
        "current_docs_per_s": now,
        "docs_per_s_ratio": ratio,
        "min_ingest_ratio": config.min_ingest_ratio,
        "baseline_documents": b.documents,
        "current_documents": c.documents,
        "baseline_failed_or_lost": lost_before,
        "current_failed_or_lost": lost_now,
        "not_gated": [f"docs/s not gated: {skipped}"] if skipped else [],
    }
    status = Status.FAIL if slower or more_lost else Status.PASS
    return Check(CheckKind.INGEST, source, name, status, summary, figures)


def compare_ingest(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """One check per (target, combination) in either run; see the module's docstring for what is gated."""
    current = {(p.target, p.label): p for p in cur.ingest_points}
    matched: set[tuple[str, str]] = set()
    checks: list[Check] = []
    for b in base.ingest_points:
        target = config.match.get(b.target, b.target)
        renamed = "" if target == b.target else f" (baseline {b.target})"  # spaced: a URL beside it stays a URL
        shown = _name(target, b.label) + renamed
        c = current.get((target, b.label))
        if c is None:
            checks.append(_not_compared(shown, source, "measured in the baseline run only"))
            continue
        matched.add((target, b.label))
        unmeasured = _unmeasured(b, c)
        checks.append(
            _not_compared(shown, source, unmeasured) if unmeasured else ingest_check(b, c, shown, config, source)
        )
    checks += [
        _not_compared(_name(*k), source, "measured in the current run only") for k in current if k not in matched
    ]
    return checks, []
