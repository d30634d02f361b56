"""One run of a command that writes results, the same for every such command (quality, demo, identity, doctor,
load, size, ceiling, and each step of a suite):

1. `--out` is checked and prepared: a folder holding an earlier run is refused unless `overwrite` (then only
   ragbench's files go), or continued with `resume` by the command's own rule for what to keep;
2. the `run` header is written, with the run's labels and provenance (bench/results/provenance.py);
3. the command writes its records, each batch whole (signals are held while a batch is written);
4. the one `end` record, with one wording for each way a run ends (`end_status`), written together with the
   command's closing records (quality's comparisons) whatever happens meanwhile;
5. the report of whatever finished, from the results file alone, also after a failure, Ctrl-C or SIGTERM.

    with open_run(Output(folder, overwrite=True, report=write_report), header) as run:
        run.write(record)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from bench.core.errors import MeasurementFailed, UserError
from bench.core.progress import ProgressFactory, console, no_progress, progress_bars
from bench.results.frame import end_status, now_iso
from bench.results.outdir import RESULTS_FILE, prepare_out_dir
from bench.results.provenance import Origin, stamp
from bench.results.schema import EndRecord, EndStatus, RunHeader
from bench.results.schema.run import DatasetBlock
from bench.results.store import Results, read_results
from bench.results.writer import ResultsWriter

# What a resumed run keeps of the interrupted one's records (the header aside); raises UserError to refuse.
CarryOver = Callable[[Results], Sequence[object]]
# The records written together with the `end` record, given the run's status (complete, failed, interrupted).
Closing = Callable[[EndStatus], Sequence[object]]


def _nothing(status: EndStatus) -> Sequence[object]:
    return []


@contextmanager
def _bars(shown: bool) -> Iterator[ProgressFactory]:
    if not shown:
        yield no_progress
        return
    with progress_bars() as bars:
        yield bars


@dataclass(frozen=True)
class Output:
    """Where a run writes and what is shown of it once it ends, as each command's options say."""

    folder: Path
    overwrite: bool = False  # replace an earlier run in `folder` (only ragbench's files there)
    resume: bool = False  # continue the interrupted run in `folder`
    report: Callable[[Results], Path] | None = None  # writes the report from the results read back, returns report.html
    show: Callable[[Results], None] | None = None  # prints what finished (read back), before the report
    say: Callable[[str], None] | None = None  # prints `report: PATH`
    progress: bool = False  # progress bars while the run is open (they end before anything is shown)
    origin: Origin = field(default_factory=Origin)  # the run's labels and suite file, for the header's provenance

    @property
    def results(self) -> Path:
        return self.folder / RESULTS_FILE


@dataclass
class OpenRun:
    """The run while it is open: its records go through `write`."""

    writer: ResultsWriter
    kept: list[object] = field(default_factory=list)  # records a resumed run kept from the interrupted one
    resumed: bool = False
    closing: Closing = _nothing  # set by the command: what to write with the `end` record
    progress: ProgressFactory = no_progress  # bars on stderr with `Output.progress`
    read_back: Results | None = None  # the results file read once the run ended, for the show, report and caller

    @property
    def path(self) -> Path:
        return self.writer.path

    def write(self, *records: object) -> None:
        self.writer.write(*records)


@contextmanager
def open_run(output: Output, header: RunHeader, carry_over: CarryOver | None = None) -> Iterator[OpenRun]:
    """Prepare `output.folder`, write `header`, yield the open run; end it with its `end` record and report,
    whatever happens inside (the exception goes on). Nothing is written before every check passed: call this
    after the command's own checks."""
    run = _start(output, header, carry_over)
    complete = False
    try:
        with _bars(output.progress) as run.progress:  # ended before the console output and the report
            try:
                yield run
            except BaseException as exc:  # a user error, a stop or a bug: the finished records stay readable
                _end(run, *end_status(exc))
                raise
            _end(run, EndStatus.COMPLETE, None)
        complete = True
    finally:
        run.read_back = _report(output, run.path, complete)


def _start(output: Output, header: RunHeader, carry_over: CarryOver | None) -> OpenRun:
    if not output.resume:
        prepare_out_dir(output.folder, header.targets, output.overwrite)
        run = OpenRun(ResultsWriter(output.results))
        labels, provenance = stamp(output.origin)
        run.write(replace(header, labels=labels, provenance=provenance))
        return run
    if carry_over is None:
        raise UserError(f"--resume {output.folder}: {header.command} cannot continue a run; give --overwrite")
    previous = _interrupted(output, header)
    kept = list(carry_over(previous))
    return OpenRun(ResultsWriter.rewritten(output.results, [previous.header, *kept]), kept, resumed=True)


# The facts of a header that must match for a run to continue another (what its figures depend on).
_SAME_RUN: tuple[tuple[str, Callable[[RunHeader], object]], ...] = (
    ("command", lambda h: h.command),
    ("--seed", lambda h: h.seed),  # before the dataset: a seed draws another sample
    ("targets", lambda h: h.targets),
    ("measures", lambda h: h.measures),
    ("--depth", lambda h: h.depth),
    ("--hourly-usd", lambda h: h.hourly_usd),
)
# What makes a dataset another, by the option that names it: the first that differs is the one said.
_SAME_DATASET = (
    ("source", "--dataset"),
    ("split", "--split"),
    ("queries", "--max-queries"),
    ("documents", "--max-docs"),
)


def _first_difference(old: RunHeader, new: RunHeader) -> str | None:
    """The first fact that differs between the interrupted run and this one: command and seed, the dataset, then
    the rest (`_SAME_RUN`)."""
    differs = [
        f"{what} differ from the interrupted run's ({was} there, {now} now)"
        for what, fact in _SAME_RUN
        if (was := fact(old)) != (now := fact(new))
    ]
    if differs and differs[0].startswith(("command", "--seed")):
        return differs[0]
    return _dataset_difference(old.dataset, new.dataset) or next(iter(differs), None)


def _dataset_difference(old: DatasetBlock, new: DatasetBlock) -> str | None:
    """Why two runs' datasets differ, named by the option a user changed (`--max-queries`: 20 queries there, 10
    now), or None when they are the same (the same fingerprint)."""
    if old.get("fingerprint") == new.get("fingerprint"):
        return None
    for key, option in _SAME_DATASET:
        if old.get(key) != new.get(key):
            return f"{option} differs from the interrupted run's ({old.get(key)} {key} there, {new.get(key)} now)"
    return f"the dataset's files changed (fingerprint {old.get('fingerprint')} there, {new.get('fingerprint')} now)"


def _interrupted(output: Output, header: RunHeader) -> Results:
    """The interrupted run in `output.folder`, checked against this one: same options, not complete."""
    if not output.results.is_file():
        raise UserError(f"--resume {output.folder}: no {RESULTS_FILE} there to continue")
    previous = read_results(output.results)
    said = _first_difference(previous.header, header)
    if said is not None:
        raise UserError(f"--resume {output.folder}: {said}; give the same options, or start a new run")
    if previous.end is not None and previous.end.status == EndStatus.COMPLETE:
        raise UserError(f"--resume {output.folder}: that run is complete; nothing to continue")
    return previous


def _end(run: OpenRun, status: EndStatus, error: str | None) -> None:
    """The closing records (skipped after an interruption: the user wants to stop) and the `end` record,
    written together, once, whatever happens meanwhile."""
    found: Sequence[object] = []
    try:
        if status != EndStatus.INTERRUPTED:
            found = run.closing(status)
    except BaseException as exc:
        status, error = end_status(exc)
        found = []
        raise
    finally:
        run.write(*found, EndRecord(status=status, finished=now_iso(), error=error))
        run.writer.close()


def _report(output: Output, path: Path, complete: bool = True) -> Results | None:
    """What finished, on the console and as the report, both from the results file read back once (returned; None
    when nothing is shown); a (second) Ctrl-C stops this too, and says how to build the report later: the results
    file is whole. A report that cannot be written (a full disk) after a `complete` run is exit 3, saying the
    results are whole; after a run that failed or stopped, one line beside its own error."""
    if output.show is None and output.report is None:
        return None
    try:
        results = read_results(path)
        if output.show is not None:
            output.show(results)
        if output.report is not None:
            page = output.report(results)
            if output.say is not None:
                output.say(f"report: {page}")
    except KeyboardInterrupt:
        console.print(f"the report was not written; `ragbench report {path}` builds it")
        raise
    except (OSError, UserError) as exc:  # a full disk, a quota: the results are whole, only the report is not
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        said = (
            f"the results are complete in {path}; the report could not be written ({why}): free space, then "
            f"`ragbench report {path}` builds it"
        )
        if not complete:  # the run's own error or stop goes on, this said beside it
            console.print(said)
            return None
        raise MeasurementFailed(said) from None
    return results
