"""What `ragbench load` (and `size`, `suite`) print of the points measured: the table, the failed and behind
points named, long drains; and the exit a failed point makes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.errors import MeasurementFailed
from bench.load import histograms
from bench.load.endpoint import DRAIN_SHOWN_S
from bench.load.points import BEHIND, ERRORS, FAILED, error_rate, point_label, point_too_busy
from bench.load.repeats import interval_text
from bench.results.schema import LatencySummary, LoadPointRecord, Loop
from bench.results.store import Results

if TYPE_CHECKING:
    from rich.table import Table


def show_points(results: Results) -> None:
    """The table of the points that finished, then each point that failed, passed its error limit or fell behind its
    schedule, named, and each wait for the server to become idle again that took long or did not end."""
    from rich.console import Console

    records = results.load_points
    if not records:
        return
    out = Console()
    Console(width=max(out.width, 150) if not out.is_terminal else None).print(summary_table(records))
    for r in records:
        if r.status in (FAILED, ERRORS, BEHIND):  # named, after the table: what the exit code is about, and why
            out.print(f"{r.status.upper()}: {problem_line(r)}", markup=False, highlight=False, soft_wrap=True)
        busy = busy_line(r)
        if busy:
            out.print(busy, markup=False, highlight=False, soft_wrap=True)
        line = drain_line(r)
        if line:
            out.print(line, markup=False, highlight=False, soft_wrap=True)


def busy_line(record: LoadPointRecord) -> str | None:
    """A point whose client the machine held back past a tenth of its median answer (bench/core/machine.py): its
    figures are the machine's as much as the endpoint's; said, not judged (`load` has no SLO to judge them by)."""
    why = point_too_busy(record)
    return f"BUSY: {point_label(record, record.endpoint)}: {why}" if why else None


def drain_line(record: LoadPointRecord) -> str | None:
    """A wait for the idle server after the point that took long or did not end (the next point's start), or None."""
    d = record.drain
    if d is None or (d.idle and d.seconds <= DRAIN_SHOWN_S):
        return None
    label = point_label(record, record.endpoint)
    if d.idle:
        return f"DRAIN: after {label} the server took {d.seconds:.1f} s to become idle again"
    return (
        f"DRAIN: after {label} the server was still busy {d.seconds:.1f} s later (a probe took {d.probe_ms:.0f} ms, "
        f"{d.idle_probe_ms:.0f} ms idle): what followed started on a busy server"
    )


def raise_if_failed(records: list[LoadPointRecord], report: Path | None = None) -> None:
    """Points that measured nothing or had no successful request make the command's measurement a failed one:
    MeasurementFailed (exit 3), raised once everything is written, naming them."""
    failed = [r for r in records if r.status == FAILED]
    if failed:
        named = "; ".join(problem_line(r) for r in failed[:3]) + (
            f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        )
        raise MeasurementFailed(
            f"{len(failed)} of {len(records)} load points measured nothing or had no successful request: {named}",
            report,
        )


def problem_line(record: LoadPointRecord) -> str:
    """`tei closed batch 1 conc 4: no request succeeded: ...`: a point that failed or passed its error limit, named."""
    return f"{point_label(record, record.endpoint)}: {record.problem}"


def summary_table(records: list[LoadPointRecord]) -> Table:
    """One line per point: what a user reads first."""
    from rich.table import Table

    table = Table(title="ragbench load", show_lines=False)
    for column in (
        "endpoint",
        "point",
        "req/s",
        "texts/s",
        "service p50",
        "service p99",
        "sched. p99",
        "errors",
        "unsent",
        "client",
    ):
        table.add_column(column, justify="right" if column not in ("endpoint", "point") else "left")

    def ms(block: LatencySummary | None, key: str = "p99") -> str:
        return histograms.quantile_text(block, key, 1, " ms")

    for r in records:
        point = point_label(r) + (f", drained in {r.duration_s:.2f} s" if r.loop == Loop.BURST else "")
        rate = f"{r.throughput.requests_per_s:.1f}"
        scheduled, window = r.requests.scheduled, r.requests.scheduled_s
        if scheduled is not None and window:  # what the window carried: sent of what the schedule set, per s
            rate += f" ({r.requests.sent / window:.1f} sent of {scheduled / window:.1f} sched.)" + (
                " BEHIND" if r.status == BEHIND else ""
            )
        utilization = r.client.utilization
        client = (
            "SATURATED" if r.client.saturated else (f"{utilization:.0%} of ceiling" if utilization is not None else "-")
        )
        table.add_row(
            r.endpoint,
            point,
            rate,
            f"{r.throughput.texts_per_s:.1f}" + interval_text(r),
            ms(r.latency_ms.service, "p50"),
            ms(r.latency_ms.service),
            ms(r.latency_ms.scheduled),
            _errors_text(r),
            str(r.requests.unsent),
            client,
        )
    return table


def _errors_text(r: LoadPointRecord) -> str:
    """A point's errors column: its error classes and counts, and its status where that is a failure."""
    errors = ", ".join(f"{k}:{v}" for k, v in sorted(r.requests.errors.items())) or "0"
    if r.status == FAILED and not r.requests.sent:
        return "FAILED: nothing measured"
    if r.status in (FAILED, ERRORS):
        return f"{r.status.upper()} {errors} ({error_rate(r.requests):.1%})"
    return errors
