"""`ragbench size` on a terminal: each point as it is measured, then every recommendation and the report."""

from __future__ import annotations

from bench.commands.size import SizeRequest, check, run_size
from bench.core.progress import console
from bench.load.points import percentile_ms, point_label, texts_per_s
from bench.results.schema import LoadPointRecord
from bench.sizing.slo import sig3


def size_with_console(request: SizeRequest) -> None:
    """Run `size`, each point said as it is measured, and the time still expected; the recommendation and the
    report follow whatever finished, also after a failure or Ctrl-C (bench.results.lifecycle)."""

    plan = check(request)  # every flag parsed once (a bad one: exit 2); the SLO's own percentile on every line
    percentile = plan.slo.percentile

    def report(point: LoadPointRecord) -> None:
        console.print(f"[dim]size: {point_label(point, point.endpoint)}: {_figures(point, percentile)}[/dim]")

    run_size(request, report, lambda text: console.print(text, markup=False, highlight=False), plan)


def _figures(point: LoadPointRecord, percentile: float = 99.0) -> str:
    """`80 texts/s answered, service p95 410 ms, scheduled p95 1,230 ms`: the SLO's percentile."""
    name = f"p{percentile:g}"
    scheduled, service = percentile_ms(point, "scheduled", percentile), percentile_ms(point, "service", percentile)
    return (
        f"{sig3(texts_per_s(point))} texts/s answered, service {name} "
        + (f"{sig3(service)} ms" if service is not None else _missing(point))
        + (f", scheduled {name} {sig3(scheduled)} ms" if scheduled is not None else "")
        + (f", errors {sum(point.requests.errors.values())}" if point.requests.errors else "")
    )


def _missing(point: LoadPointRecord) -> str:
    """Why a point has no service percentile: no answer at all, or too few to rest one on (histograms.MIN_SAMPLES)."""
    block = point.latency_ms.service
    return f"insufficient (n={block.count})" if block is not None and block.count else "- (no success)"
