"""The answer of a size run: every recommendation line, each naming the points it comes from."""

from __future__ import annotations

import math

from bench.endpoints.base import EndpointKind
from bench.load.points import error_rate, percentile_ms, point_label, texts_per_s
from bench.results.schema import CeilingPoint, LoadPointRecord, Loop, SizingLine
from bench.sizing.closed import ClosedChoice, choose_closed
from bench.sizing.economics import NO_ECONOMICS, Economics, economics_lines
from bench.sizing.search import Probe, Saturation, remeasured_text
from bench.sizing.slo import Slo, sig3
from bench.sizing.tei import tei_lines
from bench.sizing.verdict import verdict


def choose_burst(points: list[LoadPointRecord], slo: Slo) -> LoadPointRecord | None:
    """Open WebUI's ingestion: the (batch, concurrency) that drains a file fastest without errors (429 included)."""
    clean = [p for p in points if p.loop == Loop.BURST and error_rate(p.requests) <= slo.max_error_rate]
    # Fastest drain first; among equals (within 2%) the lower concurrency, which leaves the server room for queries.
    best = max(clean, key=texts_per_s, default=None)
    if best is None:
        return None
    near = [p for p in clean if texts_per_s(p) >= 0.98 * texts_per_s(best)]
    return min(near, key=lambda p: (p.concurrency or math.inf, -texts_per_s(p)))


def ceiling_for(ceiling: list[CeilingPoint], point: LoadPointRecord) -> CeilingPoint | None:
    """The in-process ceiling on the same op and text length: its best batch."""
    same = [c for c in ceiling if c.op == point.op and c.length == point.length]
    return max(same, key=lambda c: c.texts_per_s, default=None)


def recommend(
    points: list[LoadPointRecord],
    saturation: Saturation | None,
    slo: Slo,
    economics: Economics = NO_ECONOMICS,
    ceiling: list[CeilingPoint] | None = None,
    kind: str = EndpointKind.TEI,
) -> list[SizingLine]:
    """Every line of the answer, each with the points it comes from; lines that lack data say what is missing.
    TEI's flags only for a TEI endpoint (`kind`, as its spec names it)."""
    choice = choose_closed(points, slo)
    burst = choose_burst(points, slo)
    best = choice.best
    sat_point = saturation.point if saturation else None
    lines = [_batch_line(choice, points, slo)]
    if saturation is not None:
        lines += _saturation_lines(saturation, slo)
    if kind in (EndpointKind.TEI, EndpointKind.TEI_RERANK):
        lines += tei_lines(best, sat_point, burst, slo)
    else:
        lines.append(SizingLine("TEI settings", "—", f"the endpoint is {kind}, not TEI: TEI's flags do not apply", []))
    lines += _openwebui_lines(burst, points)
    lines += economics_lines(saturation, sat_point, economics)
    if ceiling is not None:
        lines.append(_ceiling_line(choice.peak, ceiling))
    return lines


def _batch_line(choice: ClosedChoice, points: list[LoadPointRecord], slo: Slo) -> SizingLine:
    best = choice.best
    closed = [p for p in points if p.loop == Loop.CLOSED]
    if best is None and not any(p.requests.ok for p in closed):  # nothing answered: nothing to judge by the SLO
        return SizingLine(
            "batch / concurrency",
            "not measured",
            "no closed-loop point had a successful request" if closed else "no closed-loop point was measured",
            [point_label(p) for p in closed],
        )
    if best is None:
        return SizingLine(
            "batch / concurrency",
            "none meets the SLO",
            f"no closed-loop point had service {slo.text()} with errors ≤ {slo.max_error_rate:g}",
            [point_label(p) for p in points if p.loop == Loop.CLOSED],
        )
    service = percentile_ms(best, "service", slo.percentile) or 0.0
    none_fit = (
        " — the queueing model leaves no batch room under the SLO, so the most raw texts/s decides"
        if choice.ranked[0][1] == 0
        else ""
    )
    others = "; ".join(
        f"batch {p.batch}: {sig3(at_slo)} (raw {sig3(texts_per_s(p))})" for p, at_slo in choice.ranked[1:]
    )
    return SizingLine(
        "client batch / concurrency",
        f"{best.batch} / {best.concurrency}",
        f"the most texts/s expected at the SLO: {sig3(choice.ranked[0][1])} of its raw {sig3(texts_per_s(best))} "
        f"(service {slo.name} {sig3(service)} ms; requests/s less ln(1/(1−q))/(2·SLO) for queueing)"
        + (f"; {others}" if others else "")
        + none_fit,
        [point_label(p) for p, _ in choice.ranked],
    )


def _rates(rates: list[float]) -> str:
    return ", ".join(sig3(r) for r in sorted(set(rates))) or "none"


def _tried_text(probes: list[Probe]) -> str:
    """`passed at 1.18; passed on windows the budget cut short (unconfirmed) at 1.47; failed at 1.84 requests/s
    offered` (the kinds no probe had left out)."""
    if not probes:
        return "no probe was measured"
    kinds = (
        ("passed", [p.judged_rate for p in probes if p.stands]),
        (
            "passed on windows the budget cut short (unconfirmed)",
            [p.judged_rate for p in probes if p.unconfirmed and not p.failed],
        ),
        ("inconclusive (the interval straddled the SLO)", [p.judged_rate for p in probes if p.inconclusive]),
        ("this machine was too busy", [p.judged_rate for p in probes if p.too_busy]),
        ("failed", [p.judged_rate for p in probes if p.failed]),
    )
    return "; ".join(f"{kind} at {_rates(rates)}" for kind, rates in kinds if rates) + " requests/s offered"


def _changes_lines(saturation: Saturation) -> list[SizingLine]:
    if not saturation.capacity_changes:
        return []
    return [
        SizingLine(
            "capacity change between probes",
            "seen",
            "; ".join(saturation.capacity_changes) + ": the answer may mix two capacities; measure again",
            [point_label(p.point) for p in saturation.probes],
        )
    ]


def _offered_value(saturation: Saturation) -> tuple[str, str]:
    """The saturation rate's value and what bounds it: a rate, a lower bound, or the interval between the highest
    steady pass and the lowest failure (a stopped search, or passes between them on windows cut short)."""
    rate, failure = sig3(saturation.rate or 0.0), saturation.first_failure
    undecided = saturation.unconfirmed or saturation.inconclusive or saturation.too_busy
    if failure is not None and (saturation.stopped or undecided):
        why = f"the search stopped ({saturation.stopped})" if saturation.stopped else "the search ended"
        return f"{rate}–{sig3(failure)} requests/s", (
            f"; {why} between this steady pass and a failure at {sig3(failure)} requests/s: the saturation rate "
            "lies between them"
        )
    if saturation.lower_bound:
        return f"≥ {rate} requests/s", f", a lower bound: {saturation.lower_bound}"
    return f"{rate} requests/s", ""


def _saturation_lines(saturation: Saturation, slo: Slo) -> list[SizingLine]:
    """The offered rate and what was achieved at it, each its own line (one a rate the client sent, the other
    what the server answered), then any capacity change the probes saw."""
    sat_point, probes = saturation.point, saturation.probes
    tried = _tried_text(probes) + remeasured_text(probes)
    if sat_point is None:  # no pass: never a lower bound; under the lowest failure when one failed
        below = saturation.first_failure
        return [
            SizingLine(
                "saturation rate",
                f"below {sig3(below)} requests/s" if below is not None else "none",
                f"no probed rate kept scheduled {slo.text()} with errors ≤ {slo.max_error_rate:g}"
                + (" on a window long enough to stand" if saturation.unconfirmed else "")
                + (" decidedly" if saturation.inconclusive or saturation.too_busy else "")
                + (f" ({saturation.stopped})" if saturation.stopped else "")
                + f"; {tried}",
                [point_label(p.point) for p in probes],
            ),
            *_changes_lines(saturation),
        ]
    value, bound = _offered_value(saturation)
    judged = verdict(sat_point, "scheduled", slo)
    offered = SizingLine(
        "saturation rate (goodput, offered)",
        value,
        f"the highest offered rate with {judged.text(slo, 'scheduled')} ≤ {sig3(slo.ms)} ms and errors "
        f"{error_rate(sat_point.requests):.2%}{bound}; {tried}",
        [point_label(sat_point)],
    )
    achieved = SizingLine(
        "answered at the saturation rate (achieved)",
        f"{sig3(texts_per_s(sat_point))} texts/s",
        f"{sig3(sat_point.throughput.requests_per_s)} requests/s of batch {sat_point.batch} answered in the probe's "
        f"{sig3(sat_point.duration_s)} s measured window",
        [point_label(sat_point)],
    )
    return [offered, achieved, *_changes_lines(saturation)]


def _openwebui_lines(burst: LoadPointRecord | None, points: list[LoadPointRecord]) -> list[SizingLine]:
    bursts = [p for p in points if p.loop == Loop.BURST]
    if burst is None:
        why = (
            "no burst point finished without errors"
            if bursts
            else "no burst workload was measured (with --max-time: none fitted in what the search left)"
        )
        return [
            SizingLine(
                "Open WebUI RAG_EMBEDDING_BATCH_SIZE / RAG_EMBEDDING_CONCURRENT_REQUESTS",
                "not determined",
                why,
                [point_label(p) for p in bursts],
            )
        ]
    drain = burst.duration_s
    return [
        SizingLine(
            "Open WebUI RAG_EMBEDDING_BATCH_SIZE",
            str(burst.batch),
            f"a {burst.burst}-chunk file drained in {sig3(drain)} s ({sig3(texts_per_s(burst))} texts/s), the fastest "
            "without errors or 429s",
            [point_label(burst)],
        ),
        SizingLine(
            "Open WebUI RAG_EMBEDDING_CONCURRENT_REQUESTS",
            str(burst.concurrency or 0),
            ("0 = unlimited; " if not burst.concurrency else "") + "the cap of that burst",
            [point_label(burst)],
        ),
    ]


def _ceiling_line(peak: LoadPointRecord | None, ceiling: list[CeilingPoint]) -> SizingLine:
    if peak is None:
        return SizingLine(
            "fraction of the in-process ceiling", "not determined", "no closed-loop point without errors", []
        )
    top = ceiling_for(ceiling, peak)
    if top is None:
        lengths = sorted({c.length for c in ceiling if c.op == peak.op})
        return SizingLine(
            "fraction of the in-process ceiling",
            "not determined",
            f"the ceiling has no {peak.op} point at length {peak.length} (it has {lengths})",
            [point_label(peak)],
        )
    fraction = texts_per_s(peak) / top.texts_per_s
    over = (
        "; over 100%: the server outruns the in-process reference (sentence-transformers, batch "
        f"{top.batch}, on {top.device_name}): its own kernels, dtype or GPU are faster — a reference, not a limit"
        if fraction > 1
        else ""
    )
    return SizingLine(
        "fraction of the in-process ceiling",
        f"{sig3(fraction * 100)}%",
        f"server's best {sig3(texts_per_s(peak))} texts/s ÷ in-process {sig3(top.texts_per_s)} texts/s "
        f"({top.device_name}, {top.dtype}){over}",
        [point_label(peak), f"ceiling {top.op} batch={top.batch} len={top.length} {top.dtype}"],
    )
