"""The sizing record of one endpoint and length: the recommendation and where the saturation search ended."""

from __future__ import annotations

from collections.abc import Callable

from bench.endpoints.base import EndpointKind
from bench.load.lengths import LengthsFrom
from bench.load.points import point_label, texts_per_s
from bench.results.schema import LoadPointRecord, SaturationProbe, SaturationSummary, SizingRecord
from bench.sizing.plan import SizePlan
from bench.sizing.recommend import recommend
from bench.sizing.search import Probe, Saturation, saturation_from
from bench.sizing.slo import Slo


def sizing_record(
    endpoint: str,
    plan: SizePlan,
    points: list[LoadPointRecord],
    length: int | LengthsFrom | None,
    telemetry: str,
    probes: list[Probe],
    stopped: str | None,
    tighter: Callable[[Saturation], str | None] = lambda saturation: None,
) -> SizingRecord:
    """The answer from one endpoint's `points` at `length`; `stopped` says why the run ended early (a lower bound);
    `tighter` says what a tighter answer would need."""
    saturation = saturation_from(probes, stopped)
    ceiling = plan.ceiling_points if plan.ceiling is not None else None
    kind = next((spec.kind for spec in plan.specs if spec.name == endpoint), EndpointKind.TEI)
    lines = recommend(points, saturation, plan.slo, plan.economics, ceiling, kind)
    return SizingRecord(
        endpoint=endpoint,
        op=plan.op,
        length=length if isinstance(length, int) else None,
        length_from=str(length) if isinstance(length, LengthsFrom) else None,
        slo_p99_ms=plan.slo.ms,
        max_error_rate=plan.slo.max_error_rate,
        saturation=saturation_summary(saturation, plan.slo, tighter(saturation)),
        lines=lines,
        telemetry=telemetry,
        ceiling=str(plan.ceiling) if plan.ceiling is not None else None,
        slo_percentile=plan.slo.percentile if plan.slo.percentile != 99.0 else None,
        stopped=stopped,
    )


def saturation_summary(saturation: Saturation, slo: Slo, tighter: str | None = None) -> SaturationSummary:
    """Where the search ended, its points by label (as the results file names them)."""
    sat = saturation.point
    return SaturationSummary(
        rate=saturation.rate,
        texts_per_s=texts_per_s(sat) if sat else None,
        point=point_label(sat) if sat else None,
        first_failure=saturation.first_failure,
        probes=[  # remeasured: failed and measured again, the majority of up to three measurements deciding
            SaturationProbe(
                p.rate,
                p.passed,
                point_label(p.point),
                remeasured=p.measured > 1,
                measurements=p.measured if p.measured > 1 else None,
                requests=p.point.requests.ok or None,
                confirmed=p.confirmed,
                unsteady=p.unsteady,
                unconfirmed=p.unconfirmed,
                carried_rate=p.carried,
                inconclusive=p.inconclusive,
                too_busy=p.too_busy,
                epoch=p.epoch or None,
            )
            for p in saturation.probes
        ],
        lower_bound=saturation.lower_bound,
        capacity_changes=saturation.capacity_changes,
        unconfirmed=saturation.unconfirmed,
        inconclusive=saturation.inconclusive,
        too_busy=saturation.too_busy,
        tighter=tighter,
    )
