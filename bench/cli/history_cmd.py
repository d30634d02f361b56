"""`ragbench history RUN...`: every run of a suite as series, their change points. Exit 0 pass, 1 the newest run
starts a change point, or is out of line, past a limit, 2 usage or input error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app

Runs = Annotated[list[str], typer.Argument(help="Results files, folders (searched for results.jsonl) or globs.")]
By = Annotated[
    str,
    typer.Option("--by", help="Run order: created (the header's stamp) or label:KEY (a --label of the runs)."),
]
Out = Annotated[Path | None, typer.Option("--out", help="Write history.md, history.json and a PNG page per job here.")]
MaxDrop = Annotated[
    list[str] | None,
    typer.Option(
        "--max-drop",
        help="MEASURE=AMOUNT (0.01 or 2% of the mean before), or AMOUNT for every measure: a quality change past it "
        "fails. Repeat.",
    ),
]
MinThroughputRatio = Annotated[
    str | None,
    typer.Option("--min-throughput-ratio", help="Load texts/s and ingest texts/s: smallest allowed after/before."),
]
MaxP99Ratio = Annotated[
    str | None, typer.Option("--max-p99-ratio", help="Load p99 and query p99: largest allowed after/before (1.1).")
]
Alpha = Annotated[
    str, typer.Option("--alpha", help="Each split's significance level: a series without a change gets a false one.")
]
Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace the history files an earlier history --out wrote (only those).")
]
Seed = Annotated[int, typer.Option("--seed", help="Seed of the permutation tests and bootstrap intervals.")]
OutputFormat = Annotated[str, typer.Option("--format", help="Output on stdout: md or json.")]


@app.command()
def history(
    runs: Runs,
    by: By = "created",
    out: Out = None,
    overwrite: Overwrite = False,
    max_drop: MaxDrop = None,
    min_throughput_ratio: MinThroughputRatio = None,
    max_p99_ratio: MaxP99Ratio = None,
    alpha: Alpha = "0.01",
    seed: Seed = 0,
    output_format: OutputFormat = "md",
) -> None:
    """Every run of a suite as series: change points, sizes, p-values; exit 1 when the newest run starts one
    past a limit, or is out of line with the runs since the last one and past a limit."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    from bench.commands.history import HistoryRequest, history_command

    if not history_command(HistoryRequest(**options)):
        raise typer.Exit(1)
