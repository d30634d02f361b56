"""`ragbench identity`: the same texts through every endpoint; exit 1 when a pair fails."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app

SPEC_HELP = (
    "NAME=KIND@URL[?option=value&...]; repeat. Kinds: tei, tei-rerank, openai (model=), cohere, "
    "reference[?model=PATH], reference-rerank?model=PATH. Keys only via key_env=VAR. See docs/endpoints.md."
)


@app.command()
def identity(
    endpoint: Annotated[list[str], typer.Option("--endpoint", "-e", help=SPEC_HELP)],
    texts: Annotated[
        Path | None, typer.Option("--texts", help='Texts: one per line, or .jsonl of strings / {"text"}.')
    ] = None,
    dataset: Annotated[
        Path | None, typer.Option("--dataset", help="A dataset folder (BEIR: corpus.jsonl + queries.jsonl).")
    ] = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="Compare every endpoint with this one only.")
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="Thresholds for float32|float16|bfloat16|int8 (default: reported by the endpoints, else float32).",
        ),
    ] = None,
    tokenizer: Annotated[
        Path | None, typer.Option("--tokenizer", help="Model folder with tokenizer.json for token-length buckets.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Use only the first N texts.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder: results.jsonl (schema ragbench.results), report.md, report.html. "
            "A FILE.json instead writes the older single JSON document (schema ragbench.identity v1).",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
    ] = False,
) -> None:
    """Send the same texts through every endpoint and compare: cosine, norms, neighbours, order, causes."""
    from bench.commands.identity import IdentityCommand, identity_command

    command = IdentityCommand(
        endpoints=endpoint,
        texts=texts,
        dataset=dataset,
        reference=reference,
        dtype=dtype,
        tokenizer=tokenizer,
        limit=limit,
        out=out,
        overwrite=overwrite,
    )
    if not identity_command(command, say=typer.echo).passed:
        raise typer.Exit(1)
