"""Calibration runs are distinct A/A runs of the baseline's sweep: a run given twice (by its path, or as a copy,
whole or cut short), the baseline or the current run itself, or a run of another sweep is refused at its
argument (one line, exit 2). Their spread is the runner's noise between runs only when each is its own run
of the same points: the same run five times calibrates ±0%, and a run of other points calibrates nothing.

What makes two results files one run: the same file; the same run header (it holds the run's `created` stamp
and settings: two runs of one sweep differ in the stamp); or a measured record in both, figure for figure (a
copy, or a copy cut short: a prefix of the run's records is the run)."""

from __future__ import annotations

from collections.abc import Sequence

from bench.core.errors import UserError
from bench.gate.inputs import same_file
from bench.load.points import PointKey, point_label
from bench.results.store import Results
from bench.results.writer import record_line

RunFiles = dict[str, Results]  # one argument's results files by source (their folder inside it; "" for one file)


def same_run(a: Results, b: Results) -> str:
    """Why two results files hold one run; empty when they are two runs."""
    if same_file(a.path, b.path):
        return "one file"
    if record_line(a.header) == record_line(b.header):
        return f"one run header, created {a.header.created}"
    lines = {record_line(p) for p in a.load_points}
    shared = [p for p in b.load_points if record_line(p) in lines]
    if shared:
        return (
            f"load point {point_label(shared[0], shared[0].endpoint)} is in both, figure for figure: "
            "a copy, whole or cut short"
        )
    return ""


def other_sweep(run: Results, baseline: Results, match: dict[str, str]) -> str:
    """Why a calibration run is not a run of the baseline's sweep (empty: it is): a point the baseline did not
    measure (another endpoint, op or setting). Measuring fewer of its points is allowed: those are said uncalibrated."""
    if not baseline.load_points:
        return f"the baseline's {baseline.path} is a {str(baseline.header.command)!r} run without load points"
    measured = {PointKey.of(p, match.get(p.endpoint, p.endpoint)) for p in baseline.load_points}
    extra = [p for p in run.load_points if PointKey.of(p) not in measured]
    if not extra:
        return ""
    more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
    return (
        f"load point {point_label(extra[0], extra[0].endpoint)}{more} is not in the baseline "
        f"({baseline.path}): an A/A run measures the baseline's sweep (its endpoints, ops and points)"
    )


def check_distinct(runs: Sequence[tuple[str, RunFiles]]) -> None:
    """Refuse a calibration run that is an earlier one again (`runs`: each argument, as said, with its files)."""
    for i, (argument, files) in enumerate(runs):
        for earlier, other in runs[:i]:
            _refuse_same(argument, files, earlier, other)


def check_against(
    runs: Sequence[tuple[str, RunFiles]],
    baseline: tuple[str, RunFiles],
    current: tuple[str, RunFiles] | None,
    match: dict[str, str],
) -> None:
    """Refuse a calibration run that is the baseline or the current run, or that measured another sweep than
    the baseline's counterpart (its results file at the same place in the folder)."""
    for argument, files in runs:
        for label, other in [baseline, *([current] if current is not None else [])]:
            _refuse_same(argument, files, label, other)
        for source, results in files.items():
            counterpart = baseline[1].get(source)
            if counterpart is None:
                where = f"{source}/results.jsonl" if source else "its results file"
                raise UserError(
                    f"{argument}: {where} has no counterpart in {baseline[0]} (calibration runs pair their "
                    "results files by path, as compare does)"
                )
            why = other_sweep(results, counterpart, match)
            if why:
                raise UserError(f"{argument}: not an A/A run of the baseline's sweep: {why}")


def _refuse_same(argument: str, files: RunFiles, label: str, other: RunFiles) -> None:
    for results in files.values():
        for seen in other.values():
            why = same_run(results, seen)
            if why:
                raise UserError(
                    f"{argument}: the same run as {label} ({results.path} and {seen.path}: {why}); calibration "
                    "runs are distinct A/A runs, neither of the runs compared"
                )
