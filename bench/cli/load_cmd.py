"""`ragbench load`: throughput and latency of embed / rerank endpoints (docs/load.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.identity_cmd import SPEC_HELP


@app.command()
def load(
    endpoint: Annotated[list[str], typer.Option("--endpoint", "-e", help=SPEC_HELP)],
    op: Annotated[str, typer.Option("--op", help="embed or rerank (default: from the endpoint kind).")] = "",
    batch: Annotated[
        str | None, typer.Option("--batch", help="Texts per request, comma list (embed). Default 1.")
    ] = None,
    concurrency: Annotated[
        str | None,
        typer.Option(
            "--concurrency", help="Closed loop users (burst: in-flight cap, 0 = none), comma list. Default 1."
        ),
    ] = None,
    rate: Annotated[
        str | None, typer.Option("--rate", help="Open loop instead: offered requests/s, comma list.")
    ] = None,
    arrival: Annotated[
        str, typer.Option("--arrival", help="Open-loop arrivals: constant, poisson or gamma:CV.")
    ] = "constant",
    max_inflight: Annotated[
        int | None,
        typer.Option("--max-inflight", help="Open loop: at most N requests in flight; due ones wait in the client."),
    ] = None,
    burst: Annotated[
        int | None,
        typer.Option("--burst", help="Open WebUI ingestion: N texts as ceil(N/batch) requests at once, then drain."),
    ] = None,
    duration: Annotated[
        str | None, typer.Option("--duration", help="Measured time per point, e.g. 30s, 500ms, 2m. Default 10s.")
    ] = None,
    requests: Annotated[
        int | None, typer.Option("--requests", help="Measured requests per point instead of --duration.")
    ] = None,
    warmup: Annotated[str, typer.Option("--warmup", help="Warm-up per point, excluded from every figure.")] = "2s",
    workers: Annotated[int, typer.Option("--workers", help="Client processes, one event loop each.")] = 1,
    texts: Annotated[
        Path | None, typer.Option("--texts", help='Texts: one per line, or .jsonl of strings / {"text"}.')
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset", help="A dataset folder (corpus texts; queries for rerank). Default: builtin:numpy-docs."
        ),
    ] = None,
    lengths: Annotated[
        str | None, typer.Option("--lengths", help="Cut texts to N tokens (words without --tokenizer), comma list.")
    ] = None,
    documents: Annotated[
        str | None, typer.Option("--documents", help="Rerank: candidates per query, comma list. Default 10.")
    ] = None,
    tokenizer: Annotated[
        Path | None,
        typer.Option("--tokenizer", help="Model folder with tokenizer.json for token counts and --lengths."),
    ] = None,
    timeout: Annotated[str, typer.Option("--timeout", help="Per-request timeout.")] = "30s",
    seed: Annotated[int, typer.Option("--seed", help="Seed for poisson/gamma arrivals.")] = 0,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("reports/load"),
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
    ] = False,
    max_error_rate: Annotated[
        float,
        typer.Option(
            "--max-error-rate",
            help=(
                "A point whose (errors + unsent) / requests is above this is marked ERRORS and the command exits 1 "
                "(a point with no success: exit 3)."
            ),
        ),
    ] = 0.001,
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            help=(
                "Measure each point N times, interleaved (A, B, C, A, B, C, ...): one record per point with its "
                "repeats and 95% bootstrap intervals, which compare gates on (docs/ci.md)."
            ),
        ),
    ] = 1,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help=(
                "Run the --workers as Ray actors on a cluster: auto, "
                "or the head's host:port (pip install 'ragbench[ray]'; docs/sizing.md)."
            ),
        ),
    ] = None,
) -> None:
    """Measure throughput and latency over a sweep of batch x concurrency, offered rates, or bursts.
    Exit 0 every point measured within --max-error-rate, 1 a point past it, 3 a point measured nothing or had no
    success."""
    from bench.commands.load import LoadRequest, load_command
    from bench.core.errors import EXIT_CHECK_FAILED
    from bench.load.points import ERRORS

    records = load_command(
        LoadRequest(
            endpoints=endpoint,
            op=op,
            batch=batch,
            concurrency=concurrency,
            rate=rate,
            arrival=arrival,
            max_inflight=max_inflight,
            burst=burst,
            duration=duration,
            requests=requests,
            warmup=warmup,
            workers=workers,
            texts=texts,
            dataset=dataset,
            lengths=lengths,
            documents=documents,
            tokenizer=tokenizer,
            timeout=timeout,
            seed=seed,
            out=out,
            overwrite=overwrite,
            ray=ray,
            max_error_rate=max_error_rate,
            repeat=repeat,
        )
    )
    if any(r.status == ERRORS for r in records):  # a point past --max-error-rate: a check that failed
        raise typer.Exit(EXIT_CHECK_FAILED)
