"""`ragbench load`: throughput and latency of embed / rerank endpoints (docs/load.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import ArrivalSeed, Endpoints, Labels, Op, Out, Overwrite, Ray, Texts, Timeout, Workers

Batch = Annotated[str | None, typer.Option("--batch", help="Texts per request, comma list (embed). Default 1.")]
Concurrency = Annotated[
    str | None,
    typer.Option("--concurrency", help="Closed loop users (burst: in-flight cap, 0 = none), comma list. Default 1."),
]
Rate = Annotated[str | None, typer.Option("--rate", help="Open loop instead: offered requests/s, comma list.")]
Arrival = Annotated[str, typer.Option("--arrival", help="Open-loop arrivals: constant, poisson or gamma:CV.")]
MaxInflight = Annotated[
    int | None,
    typer.Option("--max-inflight", help="Open loop: at most N requests in flight; due ones wait in the client."),
]
Burst = Annotated[
    int | None,
    typer.Option("--burst", help="Open WebUI ingestion: N texts as ceil(N/batch) requests at once, then drain."),
]
Duration = Annotated[
    str | None, typer.Option("--duration", help="Measured time per point, e.g. 30s, 500ms, 2m. Default 10s.")
]
Requests = Annotated[int | None, typer.Option("--requests", help="Measured requests per point instead of --duration.")]
Warmup = Annotated[str, typer.Option("--warmup", help="Warm-up per point, excluded from every figure.")]
Dataset = Annotated[
    Path | None,
    typer.Option("--dataset", help="A dataset folder (corpus texts; queries for rerank). Default: builtin:numpy-docs."),
]
Lengths = Annotated[
    str | None, typer.Option("--lengths", help="Cut texts to N tokens (words without --tokenizer), comma list.")
]
Documents = Annotated[
    str | None, typer.Option("--documents", help="Rerank: candidates per query, comma list. Default 10.")
]
Tokenizer = Annotated[
    Path | None, typer.Option("--tokenizer", help="Model folder with tokenizer.json for token counts and --lengths.")
]
MaxErrorRate = Annotated[
    float,
    typer.Option(
        "--max-error-rate",
        help=(
            "A point whose (errors + unsent) / requests is above this is marked ERRORS and the command exits 1 "
            "(a point with no success: exit 3)."
        ),
    ),
]
Repeat = Annotated[
    int,
    typer.Option(
        "--repeat",
        help=(
            "Measure each point N times, interleaved (A, B, C, A, B, C, ...): one record per point with its "
            "repeats and 95% bootstrap intervals, which compare gates on (docs/ci.md)."
        ),
    ),
]
RequestsCsv = Annotated[
    Path | None,
    typer.Option(
        "--requests-csv",
        help=(
            "Also write one row per measured request to this CSV file: point, worker, intended / actual send and "
            "end times, outcome, texts, tokens (docs/load.md)."
        ),
    ),
]


@app.command()
def load(
    endpoints: Endpoints,
    op: Op = "",
    batch: Batch = None,
    concurrency: Concurrency = None,
    rate: Rate = None,
    arrival: Arrival = "constant",
    max_inflight: MaxInflight = None,
    burst: Burst = None,
    duration: Duration = None,
    requests: Requests = None,
    warmup: Warmup = "2s",
    workers: Workers = 1,
    texts: Texts = None,
    dataset: Dataset = None,
    lengths: Lengths = None,
    documents: Documents = None,
    tokenizer: Tokenizer = None,
    timeout: Timeout = "30s",
    seed: ArrivalSeed = 0,
    out: Out = Path("reports/load"),
    overwrite: Overwrite = False,
    max_error_rate: MaxErrorRate = 0.001,
    repeat: Repeat = 1,
    ray: Ray = None,
    requests_csv: RequestsCsv = None,
    labels: Labels = None,
) -> None:
    """Measure throughput and latency over a sweep of batch x concurrency, offered rates, or bursts.
    Exit 0 every point measured within --max-error-rate, 1 a point past it, 3 a point measured nothing or had no
    success."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    del options["labels"]  # the header's, not a request field: `origin` below
    from bench.commands.load import LoadRequest, load_command
    from bench.core.errors import EXIT_CHECK_FAILED
    from bench.load.points import ERRORS
    from bench.results.provenance import Origin, parse_labels

    records = load_command(LoadRequest(**options, origin=Origin(parse_labels(labels))))
    if any(r.status == ERRORS for r in records):  # a point past --max-error-rate: a check that failed
        raise typer.Exit(EXIT_CHECK_FAILED)
