"""`ragbench run SUITE.toml [--baseline DIR] [--out DIR]`: a whole suite and its gate, as one CI command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import Labels


@app.command()
def run(
    suite: Annotated[
        Path, typer.Argument(help="Suite file (TOML): datasets, targets, endpoints, load sweeps, thresholds.")
    ],
    baseline: Annotated[
        Path | None, typer.Option("--baseline", help="A previous run's --out folder to gate against.")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/<suite name>).")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write the gate's JUnit XML here.")] = None,
    summary: Annotated[
        Path | None,
        typer.Option("--summary", help="Append the gate's markdown here (default: $GITHUB_STEP_SUMMARY when set)."),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace an earlier run in --out and earlier gate outputs (only ragbench's files there).",
        ),
    ] = False,
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            help="Earlier results (folder or glob): each load point's runs since its last change point calibrate "
            "the gate.",
        ),
    ] = None,
    benchmark_json: Annotated[
        Path | None, typer.Option("--benchmark-json", help="Write pytest-benchmark JSON of latency and throughput.")
    ] = None,
    labels: Labels = None,
) -> None:
    """Run every quality, identity and load entry of a suite; with --baseline, gate the run (exit 1 on a regression)."""
    from bench.cli.suite import load_suite
    from bench.commands.suite import run_suite
    from bench.gate.history_floor import history_gate
    from bench.gate.inputs import locate_results
    from bench.gate.output_files import check_output_paths, write_outputs
    from bench.gate.text import render_text
    from bench.results.provenance import parse_labels

    given = parse_labels(labels)
    loaded = load_suite(suite)
    if history is not None:
        loaded.gate = history_gate(loaded.gate, history)
    out = out or Path("reports") / loaded.name
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary = summary or (Path(step_summary) if step_summary else None)
    baseline_files = list(locate_results(baseline).values()) if baseline is not None and baseline.exists() else []
    # before any job runs: an output that would overwrite what this run reads or writes is refused now
    outputs = {"--junit": junit, "--summary": summary, "--benchmark-json": benchmark_json}
    check_output_paths(outputs, [suite, *baseline_files], tuple(out / job.folder for job in loaded.jobs), overwrite)
    outcome = run_suite(loaded, out, baseline, say=typer.echo, overwrite=overwrite, labels=given)
    typer.echo(render_text(outcome.comparison), nl=False)
    write_outputs(outcome.comparison, outcome.comparison.runs, junit=junit, summary=summary, benchmark=benchmark_json)
    for line in outcome.errors + outcome.failed_measurements:
        typer.echo(f"ragbench: error: {line}", err=True)
    raise typer.Exit(outcome.exit_code)
