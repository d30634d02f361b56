"""What `ragbench ingest` prints once it ends: per target a table of its combinations, the recommendation and the
hop that held the time, then each combination that lost or failed documents, named — the answer first, as `size`
and `quality` print theirs; the report holds the rest."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from bench.report.ingest import answer_lines, setting_columns, targets_of
from bench.results.schema import IngestPointRecord, IngestStatus
from bench.results.store import Results

MISSING = "–"


def _num(value: float | None, spec: str = ".2f") -> str:
    return MISSING if value is None else format(value, spec)


def _table(target: str, points: list[IngestPointRecord]) -> Table:
    names, labels = setting_columns(points)
    table = Table(title=target, title_justify="left")
    for column in [*names, "status", "docs/s", "processed", "failed", "lost", "doc p50 ms", "calls", "busy %"]:
        table.add_column(column)
    table.add_column("app ÷ direct")
    for point, shown in zip(points, labels):
        embedding = point.calls.get("embedding")
        busy = embedding.busy_fraction if embedding is not None else None
        table.add_row(
            *shown,
            str(point.status),
            _num(point.docs_per_s),
            f"{point.processed} of {point.documents}",
            str(point.failed),
            str(point.lost),
            _num(point.doc_latency_ms.get("p50"), ".0f"),
            MISSING if embedding is None else str(embedding.calls),
            MISSING if busy is None else f"{busy * 100:.0f}",
            _num(point.app_over_direct),
        )
    return table


def problem_lines(points: list[IngestPointRecord]) -> list[str]:
    """One line per combination that failed or lost documents, or could not be measured."""
    lines = []
    for p in points:
        if p.status == IngestStatus.FAILED:
            lines.append(f"FAILED: {p.target} {p.label}: not measured: {p.error or MISSING}")
        elif p.failed or p.lost:
            example = next(iter(p.failed_examples.items()), None)
            first = f" (first: {example[0]}: {example[1]})" if example else ""
            lines.append(
                f"LOST: {p.target} {p.label}: {p.failed} failed and {p.lost} lost of {p.documents} documents{first}"
            )
    return lines


def show_ingest(results: Results) -> None:
    """The tables, the answer and the problems, on stdout."""
    out = Console()
    wide = Console(width=max(out.width, 150) if not out.is_terminal else None)
    for target in targets_of(results):
        points = [p for p in results.ingest_points if p.target == target]
        if points:
            wide.print(_table(target, points))
    for line in answer_lines(results):
        text = line.removeprefix("- ").replace("**", "").replace("`", "")
        out.print(text, markup=False, highlight=False, soft_wrap=True)
    for line in problem_lines(results.ingest_points):
        out.print(line, markup=False, highlight=False, soft_wrap=True)
