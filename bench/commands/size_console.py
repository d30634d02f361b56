"""`ragbench size` on a terminal: each point as it is measured, then every recommendation and the report."""

from __future__ import annotations

from bench.commands.size import SizeRequest, run_size
from bench.core.progress import console
from bench.load.points import p99_ms, point_label, texts_per_s
from bench.results.schema import LoadPointRecord


def size_with_console(request: SizeRequest) -> None:
    """Run `size`, each point said as it is measured; the recommendation and the report follow whatever
    finished, also after a failure or Ctrl-C (bench.results.lifecycle)."""

    def report(point: LoadPointRecord) -> None:
        console.print(f"[dim]size: {point_label(point, point.endpoint)}: {_figures(point)}[/dim]")

    run_size(request, report)


def _figures(point: LoadPointRecord) -> str:
    scheduled, service = p99_ms(point, "scheduled"), p99_ms(point, "service")
    return (
        f"{texts_per_s(point):.1f} texts/s, service p99 "
        + (f"{service:.1f} ms" if service is not None else "- (no success)")
        + (f", scheduled p99 {scheduled:.1f} ms" if scheduled is not None else "")
        + (f", errors {sum(point.requests.errors.values())}" if point.requests.errors else "")
    )
