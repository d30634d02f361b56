"""`ragbench compare BASELINE CURRENT`: the CI gate. Exit 0 pass, 1 regression, 2 usage or input error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app

FORMATS = ("text", "md", "json")


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline results file or folder.")],
    current: Annotated[Path, typer.Argument(help="Current results file or folder.")],
    max_drop: Annotated[
        list[str] | None,
        typer.Option(
            "--max-drop",
            help="MEASURE=AMOUNT (0.01 or 2% of the baseline), or AMOUNT for every measure; default 0. Repeat.",
        ),
    ] = None,
    alpha: Annotated[
        str, typer.Option("--alpha", help="Significance level of a quality drop (Holm across a run's checks).")
    ] = "0.05",
    no_significance: Annotated[
        bool, typer.Option("--no-significance", help="Fail every drop past its allowance, significant or not.")
    ] = False,
    max_p99_increase: Annotated[
        str | None,
        typer.Option("--max-p99-increase", help="Load: largest allowed p99 latency increase (10% or 0.1)."),
    ] = None,
    min_throughput_ratio: Annotated[
        str | None,
        typer.Option("--min-throughput-ratio", help="Load: smallest allowed current/baseline throughput (0.95)."),
    ] = None,
    max_error_rate: Annotated[
        str,
        typer.Option(
            "--max-error-rate",
            help="Load: largest allowed rise of a point's error rate (0.01 or 1%); default 0: any rise fails.",
        ),
    ] = "0",
    inconclusive: Annotated[
        str,
        typer.Option(
            "--inconclusive",
            help=(
                "Load points with repeats on both sides: what a gate whose interval straddles its limit counts as, "
                "pass or fail (said in every output)."
            ),
        ),
    ] = "pass",
    match: Annotated[
        list[str] | None,
        typer.Option("--match", help="BASE_NAME=CUR_NAME: a target or endpoint renamed since the baseline. Repeat."),
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML: one test case per check.")] = None,
    summary: Annotated[
        Path | None,
        typer.Option("--summary", help="Append the markdown summary here (default: $GITHUB_STEP_SUMMARY when set)."),
    ] = None,
    benchmark_json: Annotated[
        Path | None,
        typer.Option(
            "--benchmark-json", help="Write pytest-benchmark JSON of the current run's latency and throughput."
        ),
    ] = None,
    output_format: Annotated[str, typer.Option("--format", help="Output on stdout: text, md or json.")] = "text",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the randomization tests and bootstrap intervals.")] = 0,
) -> None:
    """Compare a run with its baseline check by check; exit 1 when something regressed."""
    from bench.core import values
    from bench.core.errors import UserError
    from bench.gate.compare import (
        GateConfig,
        compare_paths,
        locate_results,
        parse_allowance,
        parse_error_rate,
        parse_inconclusive,
        parse_matches,
        parse_max_drops,
        parse_ratio,
    )
    from bench.gate.outputs import (
        check_output_paths,
        render_json,
        render_markdown,
        render_text,
        write_outputs,
    )

    if output_format not in FORMATS:
        raise UserError(f"--format {output_format!r}: expected one of {', '.join(FORMATS)}")
    level = parse_ratio(alpha, "--alpha")
    if not 0 < level < 1:
        raise UserError(f"--alpha {alpha!r}: must be between 0 and 1")
    config = GateConfig(
        max_drop=parse_max_drops(max_drop or []),
        alpha=level,
        significance=not no_significance,
        max_p99_increase=parse_allowance(max_p99_increase, "--max-p99-increase", percent_only=True)
        if max_p99_increase
        else None,
        min_throughput_ratio=parse_ratio(min_throughput_ratio, "--min-throughput-ratio")
        if min_throughput_ratio
        else None,
        max_error_rate=parse_error_rate(max_error_rate, "--max-error-rate"),
        match=parse_matches(match or []),
        seed=values.number("--seed", seed, values.SEED),
        inconclusive=parse_inconclusive(inconclusive, "--inconclusive"),
    )
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    summary = summary or (Path(step_summary) if step_summary else None)
    check_output_paths(
        {"--junit": junit, "--summary": summary, "--benchmark-json": benchmark_json},
        [*locate_results(baseline).values(), *locate_results(current).values()],
    )
    comparison = compare_paths(baseline, current, config)
    render = {"text": render_text, "md": render_markdown, "json": render_json}[output_format]
    typer.echo(render(comparison), nl=False)  # the verdict first: a file that cannot be written must not hide it
    write_outputs(comparison, comparison.runs, junit=junit, summary=summary, benchmark=benchmark_json)
    if not comparison.passed:
        raise typer.Exit(1)
