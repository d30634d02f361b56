"""`ragbench run SUITE.toml [--baseline DIR] [--out DIR]`: a whole suite and its gate, as one CI command. Its gate
outputs and `--history` are `compare`'s (bench/gate/options.py), declared once."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.declared import command
from bench.commands.options import LABELS, Flag, option
from bench.gate.options import HISTORY, GateOutputs

Suite = Annotated[
    Path, typer.Argument(help="Suite file (TOML): datasets, targets, endpoints, load sweeps, thresholds.")
]


@dataclass(frozen=True, kw_only=True)
class RunRequest(GateOutputs):
    suite: Path
    baseline: Path | None = field(
        default=None, metadata=option(Flag(("--baseline",), "A previous run's --out folder to gate against."))
    )
    out: Path | None = field(
        default=None, metadata=option(Flag(("--out",), "Output folder (default reports/<suite name>)."))
    )
    overwrite: bool = field(
        default=False,
        metadata=option(
            Flag(
                ("--overwrite",),
                "Replace an earlier run in --out and earlier gate outputs (only ragbench's files there).",
            )
        ),
    )
    history: str | None = field(default=None, metadata=option(HISTORY))
    labels: list[str] | None = field(default=None, metadata=option(LABELS))


def run(request: RunRequest) -> int:
    """Run every job of the suite, gate it, print and write the verdict; the exit code."""
    from bench.cli.suite import load_suite
    from bench.commands.suite import run_suite
    from bench.gate.history_floor import history_gate
    from bench.gate.inputs import locate_results
    from bench.gate.output_files import check_output_paths, write_outputs
    from bench.gate.text import render_text
    from bench.results.provenance import parse_labels

    given = parse_labels(request.labels)
    loaded = load_suite(request.suite)
    if request.history is not None:
        loaded.gate = history_gate(loaded.gate, request.history)
    out = request.out or Path("reports") / loaded.name
    baseline = request.baseline
    baseline_files = list(locate_results(baseline).values()) if baseline is not None and baseline.exists() else []
    # before any job runs: an output that would overwrite what this run reads or writes is refused now
    outputs = request.paths()
    writes = tuple(out / job.folder for job in loaded.jobs)
    check_output_paths(outputs, [request.suite, *baseline_files], writes, request.overwrite)
    outcome = run_suite(loaded, out, baseline, say=typer.echo, overwrite=request.overwrite, labels=given)
    typer.echo(render_text(outcome.comparison), nl=False)
    summary, benchmark = outputs["--summary"], request.benchmark_json
    write_outputs(
        outcome.comparison, outcome.comparison.runs, junit=request.junit, summary=summary, benchmark=benchmark
    )
    for line in outcome.errors + outcome.failed_measurements:
        typer.echo(f"ragbench: error: {line}", err=True)
    return outcome.exit_code


def _run(request: RunRequest) -> None:
    raise typer.Exit(run(request))


command(
    "run",
    RunRequest,
    _run,
    "Run every quality, identity and load entry of a suite; with --baseline, gate the run (exit 1 on a regression).",
    extra=(("", inspect.Parameter("suite", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Suite)),),
)
