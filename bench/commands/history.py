"""The plain function behind `ragbench history`: read the runs, find each series' change points, gate the newest run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.core import values
from bench.core.errors import UserError
from bench.core.values import parse_ratio
from bench.gate.config import parse_max_drops
from bench.history.analysis import HistoryReport, Limits, analyse
from bench.history.changepoints import DetectorSettings
from bench.history.runs import parse_order
from bench.history.series import read_history
from bench.report.history import check_outputs, render_json, render_markdown, write_outputs

RENDERERS = {"md": render_markdown, "json": render_json}


@dataclass
class HistoryRequest:
    runs: list[str] = field(default_factory=list)  # results files, folders or globs
    by: str = "created"  # created | label:KEY
    out: Path | None = None  # history.md, history.json, history_<job>.png
    overwrite: bool = False  # replace the history files an earlier `history --out` wrote there (only those)
    max_drop: list[str] | None = None  # MEASURE=AMOUNT, or AMOUNT for every measure
    min_throughput_ratio: str | None = None
    max_p99_ratio: str | None = None
    alpha: str = "0.01"
    seed: int = 0
    output_format: str = "md"


def limits(request: HistoryRequest) -> Limits:
    ratio, p99 = request.min_throughput_ratio, request.max_p99_ratio
    smallest = parse_ratio(ratio, "--min-throughput-ratio") if ratio is not None else None
    largest = parse_ratio(p99, "--max-p99-ratio") if p99 is not None else None
    # a ratio past 1 on the wrong side would fail an improvement (or a run unchanged)
    if smallest is not None and not 0 < smallest <= 1:
        raise UserError(f"--min-throughput-ratio {ratio!r}: must be above 0 and at most 1 (after / before)")
    if largest is not None and largest < 1:
        raise UserError(f"--max-p99-ratio {p99!r}: must be 1 or more (after / before)")
    return Limits(
        max_drop=parse_max_drops(request.max_drop or []), min_throughput_ratio=smallest, max_p99_ratio=largest
    )


def settings(request: HistoryRequest) -> DetectorSettings:
    alpha = parse_ratio(request.alpha, "--alpha")
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {request.alpha!r}: must be between 0 and 1")
    return DetectorSettings(alpha=alpha, seed=values.number("--seed", request.seed, values.SEED))


def history_report(request: HistoryRequest) -> HistoryReport:
    """Every option checked (one line, exit 2) before a file is read; then the history analysed."""
    if request.output_format not in RENDERERS:
        raise UserError(f"--format {request.output_format!r}: expected one of {', '.join(RENDERERS)}")
    if not request.runs:
        raise UserError("history: give one or more results files, folders or globs")
    label, gate, detector = parse_order(request.by), limits(request), settings(request)
    return analyse(read_history(request.runs, label), gate, detector)


def history_command(request: HistoryRequest) -> bool:
    """Print the summary and write the outputs asked for; False when the newest run fails a limit."""
    replaced = check_outputs(request.out, request.overwrite) if request.out is not None else []
    report = history_report(request)
    print(RENDERERS[request.output_format](report), end="", flush=True)
    if request.out is not None:
        write_outputs(report, request.out, replaced)
    return not report.failed
