"""The plain function behind `ragbench history`: read the runs, find each series' change points, gate the newest run."""

from __future__ import annotations

from bench.commands.gate_requests import HistoryRequest
from bench.core import values
from bench.core.errors import UserError
from bench.core.values import parse_allowance, parse_ratio
from bench.gate.config import parse_max_drops
from bench.history.analysis import HistoryReport, Limits, analyse
from bench.history.changepoints import DetectorSettings
from bench.history.runs import parse_order
from bench.history.series import read_history
from bench.report.history import check_outputs, render_json, render_markdown, write_outputs

RENDERERS = {"md": render_markdown, "json": render_json}


def limits(request: HistoryRequest) -> Limits:
    ratio, p99 = request.min_throughput_ratio, request.max_p99_ratio
    smallest = parse_ratio(ratio, "--min-throughput-ratio") if ratio is not None else None
    largest = parse_ratio(p99, "--max-p99-ratio") if p99 is not None else p99_ratio(request.max_p99_increase)
    # a ratio past 1 on the wrong side would fail an improvement (or a run unchanged)
    if smallest is not None and not 0 < smallest <= 1:
        raise UserError(f"--min-throughput-ratio {ratio!r}: must be above 0 and at most 1 (after / before)")
    if largest is not None and largest < 1:
        raise UserError(f"--max-p99-ratio {p99!r}: must be 1 or more (after / before)")
    return Limits(
        max_drop=parse_max_drops(request.max_drop or []), min_throughput_ratio=smallest, max_p99_ratio=largest
    )


def p99_ratio(increase: str | None) -> float | None:
    """`--max-p99-increase` (10% or 0.1, as `compare` takes it) as the after/before ratio the history gates."""
    if increase is None:
        return None
    return 1 + parse_allowance(increase, "--max-p99-increase", percent_only=True).value


def settings(request: HistoryRequest) -> DetectorSettings:
    alpha = parse_ratio(request.alpha, "--alpha")
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {request.alpha!r}: must be between 0 and 1")
    return DetectorSettings(alpha=alpha, seed=values.number("--seed", request.seed, values.SEED))


def history_report(request: HistoryRequest) -> HistoryReport:
    """Every option checked (one line, exit 2) before a file is read; then the history analysed."""
    if request.output_format not in RENDERERS:
        raise UserError(f"--format {request.output_format!r}: expected one of {', '.join(RENDERERS)}")
    if request.max_p99_ratio is not None and request.max_p99_increase is not None:
        raise UserError("history: give --max-p99-increase or --max-p99-ratio (its older spelling), not both")
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
