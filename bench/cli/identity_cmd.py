"""`ragbench identity`: the same texts through every endpoint; exit 1 when a pair fails."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import Endpoints, Labels, Overwrite, Texts

Dataset = Annotated[
    Path | None, typer.Option("--dataset", help="A dataset folder (BEIR: corpus.jsonl + queries.jsonl).")
]
Reference = Annotated[str | None, typer.Option("--reference", help="Compare every endpoint with this one only.")]
Dtype = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="Thresholds for float32|float16|bfloat16|int8 (default: reported by the endpoints, else float32).",
    ),
]
Tokenizer = Annotated[
    Path | None, typer.Option("--tokenizer", help="Model folder with tokenizer.json for token-length buckets.")
]
Limit = Annotated[int | None, typer.Option("--limit", min=1, help="Use only the first N texts.")]
Out = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Output folder: results.jsonl (schema ragbench.results), report.md, report.html. "
        "A FILE.json instead writes the older single JSON document (schema ragbench.identity v1).",
    ),
]


@app.command()
def identity(
    endpoints: Endpoints,
    texts: Texts = None,
    dataset: Dataset = None,
    reference: Reference = None,
    dtype: Dtype = None,
    tokenizer: Tokenizer = None,
    limit: Limit = None,
    out: Out = None,
    overwrite: Overwrite = False,
    labels: Labels = None,
) -> None:
    """Send the same texts through every endpoint and compare: cosine, norms, neighbours, order, causes."""
    options = dict(locals())  # the parameters, named as the request's fields; taken before anything else is bound
    del options["labels"]  # the header's, not a request field: `origin` below
    from bench.commands.identity import IdentityCommand, identity_command
    from bench.results.provenance import Origin, parse_labels

    if not identity_command(IdentityCommand(**options, origin=Origin(parse_labels(labels))), say=typer.echo).passed:
        raise typer.Exit(1)
