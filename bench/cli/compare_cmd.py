"""`ragbench compare BASELINE CURRENT` (or `compare RUN`: an interleaved run, paired): the CI gate. Exit 0 pass,
1 regression, 2 usage or input error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app

Baseline = Annotated[Path, typer.Argument(help="Baseline results file or folder.")]
Current = Annotated[
    Path | None,
    typer.Argument(
        help="Current results file or folder. Left out: BASELINE is an interleaved run (load --interleave), gated "
        "on its own paired rounds."
    ),
]
MaxDrop = Annotated[
    list[str] | None,
    typer.Option(
        "--max-drop",
        help="MEASURE=AMOUNT (0.01 or 2% of the baseline), or AMOUNT for every measure; default 0. Repeat.",
    ),
]
Alpha = Annotated[
    str, typer.Option("--alpha", help="Significance level of a quality drop (Holm across a run's gated checks).")
]
NoSignificance = Annotated[
    bool, typer.Option("--no-significance", help="Fail every drop past its allowance, significant or not.")
]
MaxP99Increase = Annotated[
    str | None, typer.Option("--max-p99-increase", help="Load: largest allowed p99 latency increase (10% or 0.1).")
]
MinThroughputRatio = Annotated[
    str | None,
    typer.Option("--min-throughput-ratio", help="Load: smallest allowed current/baseline throughput (0.95)."),
]
MaxErrorRate = Annotated[
    str,
    typer.Option(
        "--max-error-rate",
        help="Load: largest allowed rise of a point's error rate (0.01 or 1%); default 0: any rise fails.",
    ),
]
Inconclusive = Annotated[
    str,
    typer.Option(
        "--inconclusive",
        help=(
            "What an inconclusive gate counts as, pass or fail (said in every output): a load interval (repeats "
            "on both sides) straddling its limit; a quality drop past its allowance significant alone, not "
            "after Holm over the gated checks."
        ),
    ),
]
Primary = Annotated[
    list[str] | None,
    typer.Option(
        "--primary",
        help=(
            "MEASURE or TARGET:MEASURE: a gated quality check; Holm corrects over these only, the rest are "
            "reported, not gated. Default: the measures with a --max-drop (every measure without one). Repeat."
        ),
    ),
]
MinIngestRatio = Annotated[
    str | None,
    typer.Option(
        "--min-ingest-ratio",
        help=(
            "Quality: smallest allowed current/baseline ingest texts/s; ingest: the same for each combination's "
            "docs/s (0.9)."
        ),
    ),
]
MaxQueryP99Increase = Annotated[
    str | None,
    typer.Option("--max-query-p99-increase", help="Quality: largest allowed per-query p99 increase (20% or 0.2)."),
]
Match = Annotated[
    list[str] | None,
    typer.Option("--match", help="BASE_NAME=CUR_NAME: a target or endpoint renamed since the baseline. Repeat."),
]
Junit = Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML: one test case per check.")]
Summary = Annotated[
    Path | None,
    typer.Option("--summary", help="Append the markdown summary here (default: $GITHUB_STEP_SUMMARY when set)."),
]
BenchmarkJson = Annotated[
    Path | None,
    typer.Option("--benchmark-json", help="Write pytest-benchmark JSON of the current run's latency and throughput."),
]
OutputFormat = Annotated[str, typer.Option("--format", help="Output on stdout: text, md or json.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the randomization tests and bootstrap intervals.")]
Calibration = Annotated[
    list[Path] | None,
    typer.Option(
        "--calibration",
        help=(
            "Load: an A/A run (the same sweep, same build, on this runner); give 5 or more. Their spread is the "
            "runner's noise between runs: no gated interval is narrower. Repeat."
        ),
    ),
]
History = Annotated[
    str | None,
    typer.Option(
        "--history",
        help=(
            "Load: earlier results (a folder of runs, e.g. CI artifacts, or a glob): each point's runs since its "
            "last change point calibrate the gate as --calibration runs would (not with --calibration)."
        ),
    ),
]
Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite", help="Replace --junit and --benchmark-json files an earlier compare wrote (only those)."
    ),
]


@app.command()
def compare(
    baseline: Baseline,
    current: Current = None,
    max_drop: MaxDrop = None,
    alpha: Alpha = "0.05",
    no_significance: NoSignificance = False,
    max_p99_increase: MaxP99Increase = None,
    min_throughput_ratio: MinThroughputRatio = None,
    max_error_rate: MaxErrorRate = "0",
    inconclusive: Inconclusive = "pass",
    primary: Primary = None,
    min_ingest_ratio: MinIngestRatio = None,
    max_query_p99_increase: MaxQueryP99Increase = None,
    match: Match = None,
    junit: Junit = None,
    summary: Summary = None,
    benchmark_json: BenchmarkJson = None,
    output_format: OutputFormat = "text",
    seed: Seed = 0,
    calibration: Calibration = None,
    history: History = None,
    overwrite: Overwrite = False,
) -> None:
    """Compare a run with its baseline check by check; exit 1 when something regressed."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    from bench.commands.compare import CompareRequest, compare_command

    if not compare_command(CompareRequest(**options)):
        raise typer.Exit(1)
