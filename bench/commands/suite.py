"""Running a suite: every job through its command's own function into OUT/<job folder>/, then the gate.
The suite file itself is read and checked by `bench/cli/suite/` (its values are the command line's options).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.commands.identity import IdentityCommand, IdentityPlan, identity_command
from bench.commands.load import LoadPlan, load_command
from bench.commands.load_request import LoadRequest
from bench.commands.quality import QualityPlan, QualityRequest, quality_command
from bench.core.errors import (
    EXIT_CHECK_FAILED,
    EXIT_MEASUREMENT_FAILED,
    EXIT_USER_ERROR,
    InputError,
    MeasurementFailed,
    UserError,
)
from bench.gate.checks import Check, Comparison
from bench.gate.config import GateConfig
from bench.results.provenance import Origin, file_sha256

Request = QualityRequest | IdentityCommand | LoadRequest
Plan = QualityPlan | IdentityPlan | LoadPlan  # a request checked: what its command function runs


@dataclass
class Job:
    """One entry of the suite: its command's own request, checked whole when the suite was loaded."""

    folder: str  # under --out: KIND-NAME (NAME: the entry's, or a quality entry's dataset), else KIND, KIND2, ...
    request: Request  # `out` and `overwrite` are set when it runs
    plan: Plan  # the request checked with the suite: its specs parsed once, run as they are

    @property
    def names(self) -> list[str]:
        """The targets or endpoints it measures, as its plan named them."""
        specs = self.plan.targets if isinstance(self.plan, QualityPlan) else self.plan.specs
        return [spec.name for spec in specs]


@dataclass
class Suite:
    path: Path
    name: str
    gate: GateConfig
    quality: list[Job]
    identity: list[Job]
    load: list[Job]
    labels: dict[str, str] = field(default_factory=dict)  # [suite] labels: every job's, under its --label ones

    @property
    def jobs(self) -> list[Job]:
        return [*self.quality, *self.identity, *self.load]


@dataclass
class SuiteOutcome:
    comparison: Comparison  # no checks when no baseline was given
    errors: list[str] = field(default_factory=list)  # jobs that ended with an error (one line each)
    identity_failed: list[str] = field(default_factory=list)  # identity runs with a failing pair
    failed_measurements: list[str] = field(default_factory=list)  # jobs that ran but failed to measure something
    # "job: endpoint point: why", a load point past its error limit
    load_errors: list[str] = field(default_factory=list)
    interleaved: list[str] = field(default_factory=list)  # the folders of `load --interleave` jobs

    @property
    def exit_code(self) -> int:
        """As every command's (bench/core/errors.py): 2 a job failed, 3 a measurement failed, 1 a check failed."""
        if self.errors:
            return EXIT_USER_ERROR
        if self.failed_measurements:
            return EXIT_MEASUREMENT_FAILED
        if self.identity_failed or self.load_errors or not self.comparison.passed:
            return EXIT_CHECK_FAILED
        return 0


def run_suite(
    suite: Suite,
    out: Path,
    baseline: Path | None,
    say: Callable[[str], None] = print,
    overwrite: bool = False,
    labels: dict[str, str] | None = None,
) -> SuiteOutcome:
    """Run every job into OUT/<kind>-<name>/, then gate OUT against the baseline. Every job's folder is
    checked first (an earlier run is refused unless `overwrite`, as each command does); a job that fails
    is said in one line and the others still run: everything measured is kept. Every job's header carries
    the suite's labels, `labels` (`run --label`) over them, and the suite file's hash."""
    _check_before_running(suite, out, baseline, overwrite)
    origin = Origin({**suite.labels, **(labels or {})}, file_sha256(suite.path))
    outcome = SuiteOutcome(Comparison("(none)", str(out), [], [], []))
    for job in suite.jobs:
        say(f"== {job.folder}")
        request = replace(job.request, out=out / job.folder, overwrite=overwrite, origin=origin)
        _run_job(request, job, outcome, say)
    outcome.comparison = _gate(suite, out, baseline, outcome.interleaved)
    outcome.comparison.notes += [
        *(f"{name}: a pair of endpoints fails its identity thresholds" for name in outcome.identity_failed),
        *(f"failed: {line}" for line in outcome.errors + outcome.failed_measurements),
        *(f"errors past the limit: {line}" for line in outcome.load_errors),
    ]
    return outcome


def _check_before_running(suite: Suite, out: Path, baseline: Path | None, overwrite: bool) -> None:
    """Everything a user can get wrong, refused before any job runs: the baseline, the gate's calibration and
    history, a calibration run inside this run's folders, a job folder already written."""
    from bench.gate.calibration import check_calibration
    from bench.gate.history_floor import check_history
    from bench.results.outdir import check_out_dir

    if baseline is not None and not baseline.exists():
        raise InputError(baseline, "no such baseline folder")  # checked before anything runs
    if baseline is not None:  # the current run is not measured yet: it goes into OUT
        check_calibration(suite.gate.calibration, baseline, None, suite.gate.match)
        check_history(suite.gate)
    for run in suite.gate.calibration.runs:
        for job in suite.jobs:
            given, written = Path(run).resolve(), (out / job.folder).resolve()
            if given.is_relative_to(written) or written.is_relative_to(given):
                raise UserError(
                    f"--calibration {run}: is inside {out / job.folder}, where this run writes the current run"
                )
    for job in suite.jobs:
        check_out_dir(out / job.folder, job.names, overwrite)


def _run_job(request: Request, job: Job, outcome: SuiteOutcome, say: Callable[[str], None]) -> None:
    """One job (`request`: its own, with this run's folder); what fails is kept in `outcome` and said in one line,
    and the suite goes on."""
    folder = job.folder
    from bench.commands.interleave import interleave_command
    from bench.commands.load_console import problem_line
    from bench.load.points import ERRORS

    try:
        plan = job.plan
        if isinstance(request, QualityRequest) and isinstance(plan, QualityPlan):
            quality_command(request, plan=plan)
        elif isinstance(request, IdentityCommand) and isinstance(plan, IdentityPlan):
            if not identity_command(request, say, plan).passed:
                outcome.identity_failed.append(folder)
        elif isinstance(request, LoadRequest) and isinstance(plan, LoadPlan) and request.interleave:
            # gated on its own paired rounds (_gate), with or without a baseline
            points, _ = interleave_command(request, checked=plan)
            outcome.load_errors += [f"{folder}: {problem_line(p)}" for p in points if p.status == ERRORS]
            outcome.interleaved.append(folder)
        elif isinstance(request, LoadRequest) and isinstance(plan, LoadPlan):
            problems = load_command(request, plan)
            outcome.load_errors += [f"{folder}: {problem_line(p)}" for p in problems if p.status == ERRORS]
    except MeasurementFailed as exc:
        outcome.failed_measurements.append(f"{folder}: {exc}")
        say(f"!! {folder}: {exc}")
    except UserError as exc:
        outcome.errors.append(f"{folder}: {exc}")
        say(f"!! {folder} failed: {exc}")


def _gate(suite: Suite, out: Path, baseline: Path | None, interleaved: list[str]) -> Comparison:
    """OUT against the baseline, and each interleaved job on its own rounds; without a baseline the outputs a CI
    job expects still appear (this run can be the next one's baseline)."""
    from bench.gate.compare import compare_paths
    from bench.gate.history_floor import with_history
    from bench.gate.inputs import locate_results
    from bench.results.store import read_results

    if baseline is not None:
        comparison = compare_paths(baseline, out, with_history(suite.gate, baseline, out))
    else:
        runs = (
            [(key, read_results(path)) for key, path in locate_results(out).items()]
            if any(out.rglob("results.jsonl"))
            else []
        )
        gated = "only the interleaved jobs are gated, on their paired rounds" if interleaved else "nothing is gated"
        comparison = Comparison("(none)", str(out), [], [f"no baseline given: {gated}"], runs)
    comparison.checks += _paired_checks(out, interleaved, suite.gate)
    return comparison


def _paired_checks(out: Path, folders: list[str], gate: GateConfig) -> list[Check]:
    """Each interleaved job's points, gated on their own rounds by the suite's [gate] limits (`compare RUN`)."""
    from bench.gate.interleaved import compare_interleaved
    from bench.results.store import read_results

    checks: list[Check] = []
    for folder in folders:
        results = out / folder / "results.jsonl"
        if results.is_file() and read_results(results).interleaved:  # a job cut before two rounds: said as failed
            checks += [replace(c, source=folder) for c in compare_interleaved(out / folder, gate).checks]
    return checks
