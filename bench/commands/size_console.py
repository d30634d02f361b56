"""`ragbench size` on a terminal: each point as it is measured, then every recommendation and the report."""

from __future__ import annotations

from bench.commands.size import SizeRequest, run_size
from bench.core.progress import console
from bench.load.points import p99_ms, point_label, texts_per_s
from bench.results.schema import LoadPointRecord
from bench.results.store import read_results


def size_with_console(request: SizeRequest) -> None:
    """Run `size`; the recommendation and the report also after a failure or Ctrl-C, once a point is written."""
    from bench.report import write_report

    measured: list[LoadPointRecord] = []

    def report(point: LoadPointRecord) -> None:
        measured.append(point)
        console.print(f"[dim]size: {point.endpoint} {point_label(point)}: {_figures(point)}[/dim]")

    results = request.out / "results.jsonl"
    try:
        run_size(request, report)
    finally:
        if measured:  # something of this run is in the results file
            for record in read_results(results).sizing:
                print(f"\n{record.endpoint} ({record.op}, length {record.length}), p99 SLO {record.slo_p99_ms:g} ms:")
                for line in record.lines:
                    print(f"  {line['setting']}: {line['value']} — {line['why']}")
            print(f"report: {write_report(results)}")


def _figures(point: LoadPointRecord) -> str:
    scheduled, service = p99_ms(point, "scheduled"), p99_ms(point, "service")
    return (
        f"{texts_per_s(point):.1f} texts/s, service p99 "
        + (f"{service:.1f} ms" if service is not None else "- (no success)")
        + (f", scheduled p99 {scheduled:.1f} ms" if scheduled is not None else "")
        + (f", errors {sum(point.requests['errors'].values())}" if point.requests["errors"] else "")
    )
