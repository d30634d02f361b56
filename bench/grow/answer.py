"""The answer of a grown ladder, per target: where it first breaks, how its latency grows, what size reaches the
SLO, and how its quality falls per tenfold size; from its `grow_rung` records alone."""

from __future__ import annotations

import math

import numpy as np

from bench.core.machine import too_busy
from bench.grow.laws import choose_law
from bench.results.schema import GrowRungRecord, GrowSummaryRecord, GrowthLaw, RungStatus
from bench.sizing.slo import Slo, sig3


def slo_quantity(slo: Slo) -> str:
    """The latency_ms key the SLO is held to (p99, p95, ...)."""
    return slo.name


def break_reason(rung: GrowRungRecord, slo: Slo | None) -> str | None:
    """Why this rung breaks (failed ingest, failed queries, over the SLO), with the message; None: it holds."""
    if rung.status == RungStatus.FAILED:
        return f"ingest failed: {rung.error}"
    if rung.errors:
        first = rung.error_counts[0]
        said = f"{sum(rung.errors.values())} of {rung.queries} queries failed ({first.key} ×{first.count}"
        return f"{said}: {first.first_message})"
    if slo is not None:
        value = rung.latency_ms.get(slo_quantity(slo))
        if value is not None and value > slo.ms:
            return f"{slo.name} {sig3(value)} ms > SLO {sig3(slo.ms)} ms"
    return None


def over_from_first(rungs: list[GrowRungRecord], slo: Slo | None) -> bool:
    """Whether the first measured rung is already over the SLO: its law then has no SLO size to extrapolate (it
    would lie below the ladder, which the first rung already answers)."""
    return slo is not None and bool(rungs) and rungs[0].latency_ms.get(slo_quantity(slo), 0.0) > slo.ms


def growth_laws(rungs: list[GrowRungRecord], slo: Slo | None) -> list[GrowthLaw]:
    """p50's law and the SLO's percentile's (p99 without an SLO), fitted on the rungs that measured latency; the
    sizes at which the SLO's law reaches the SLO, unless the first rung is already over it."""
    quantities = ["p50", slo_quantity(slo) if slo is not None else "p99"]
    over_at_first = over_from_first(rungs, slo)
    laws = []
    for quantity in dict.fromkeys(quantities):
        points = [
            (r.size, r.latency_ms[quantity]) for r in rungs if math.isfinite(r.latency_ms.get(quantity, math.nan))
        ]
        fit = choose_law(np.asarray([p[0] for p in points]), np.asarray([p[1] for p in points]))
        if fit is None:
            continue
        reaches, low, high = None, None, None
        if slo is not None and quantity == slo_quantity(slo) and not over_at_first:
            reaches, (low, high) = fit.reaches(slo.ms), fit.reaches_range(slo.ms)
        law = GrowthLaw(quantity, fit.law, fit.a, fit.b, fit.held_out_error, fit.fit_error, fit.points, reaches)
        law.credible_laws, law.slo_size_low, law.slo_size_high = [name for name, _, _ in fit.credible], low, high
        laws.append(law)
    return laws


def per_decade(rungs: list[GrowRungRecord]) -> dict[str, float]:
    """Each measure's least-squares slope against log10(size): its change per tenfold size (two rungs at least)."""
    found = {}
    for label in dict.fromkeys(m for r in rungs for m in r.metrics):
        points = [(math.log10(r.size), r.metrics[label]) for r in rungs if label in r.metrics]
        if len({x for x, _ in points}) < 2:
            continue
        x, y = np.asarray([p[0] for p in points]), np.asarray([p[1] for p in points])
        found[label] = float(np.polyfit(x, y, 1)[0])
    return found


def rung_too_busy(rung: GrowRungRecord) -> str | None:
    """Why the rung's latencies are the machine's as much as the app's (bench.core.machine.too_busy on the scale
    of its p50: the host stalled ragbench's own timer past a tenth of a typical query); None: it carried them."""
    p50 = rung.latency_ms.get("p50")
    return None if p50 is None else too_busy(rung.lag_p99_ms, p50, rung.machine)


def summarise(target: str, rungs: list[GrowRungRecord], slo: Slo | None, unit: str) -> GrowSummaryRecord:
    """The `grow` record of one target from its rungs (in ladder order). A rung the machine stalled neither holds
    nor breaks the SLO (a failed ingest or failed queries still break): its latencies are left out of the laws."""
    busy = [r.rung for r in rungs if r.status != RungStatus.FAILED and rung_too_busy(r) is not None]
    judged = [r for r in rungs if r.rung not in busy or r.status == RungStatus.FAILED or r.errors]
    broken = next(((r, why) for r in judged if (why := break_reason(r, slo)) is not None), None)
    held = [r for r in judged if (broken is None or r.rung < broken[0].rung) and r.rung not in busy]
    measured = [r for r in rungs if r.status != RungStatus.FAILED and r.rung not in busy]
    laws = growth_laws(measured, slo)
    quality = per_decade(measured)
    summary = GrowSummaryRecord(
        target=target,
        slo=slo.text() if slo is not None else None,
        largest_ok=held[-1].size if held else None,
        first_break=broken[0].size if broken else None,
        first_break_reason=broken[1] if broken else None,
        laws=laws,
        quality_per_decade=quality,
        answer="",
        busy_rungs=busy,
    )
    summary.answer = answer_line(summary, unit, over_from_first(measured, slo))
    return summary


def answer_line(summary: GrowSummaryRecord, unit: str, over_at_first: bool) -> str:
    """One line: where it breaks (or holds to), its latency law and the size it reaches the SLO at (or that it is
    over the SLO from the first rung), quality."""
    within = f" within {summary.slo}" if summary.slo else ""
    if summary.first_break is not None:
        first = ", the first rung" if summary.largest_ok is None else ""
        said = [f"breaks at {summary.first_break:,} {unit}{first}: {summary.first_break_reason}"]
        if summary.largest_ok is not None:
            said[0] += f" (held{within} to {summary.largest_ok:,})"
    elif summary.largest_ok is not None:
        said = [f"holds{within} to {summary.largest_ok:,} {unit}, the largest rung measured"]
    else:
        said = ["nothing measured"]
    for law in summary.laws:
        others = [name for name in law.credible_laws if name != law.law]
        allowed = f"; the rungs also allow {', '.join(others)}" if others else ""
        part = f"{law.quantity} grows {law.law} (held-out error {law.held_out_error:.0%}{allowed})"
        if law.slo_size is not None:
            part += f", reaches the SLO at ~{sig3(law.slo_size)} {unit}"
        elif over_at_first and law.quantity == (summary.slo or "").split()[0]:
            part += ", over the SLO from the first rung"
        if law.slo_size_low is not None and others:
            high = f"{sig3(law.slo_size_high)} {unit}" if law.slo_size_high is not None else "never"
            part += f", the credible laws reach it at {sig3(law.slo_size_low)} {unit} to {high}"
        said.append(part)
    said += [f"{label} {change:+.3f} per tenfold size" for label, change in summary.quality_per_decade.items()]
    if summary.busy_rungs:
        rungs = ", ".join(str(n) for n in summary.busy_rungs)
        said.append(f"rungs {rungs}: this machine was too busy (their latencies left out of the laws; measure again)")
    return f"{summary.target}: " + "; ".join(said)
