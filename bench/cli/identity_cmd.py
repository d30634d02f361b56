"""`ragbench identity`: the same texts through every endpoint; exit 1 when a pair fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.cli.app import app

SPEC_HELP = (
    "NAME=KIND@URL[?option=value&...]; repeat. Kinds: tei, tei-rerank, openai (model=), cohere, "
    "reference[?model=PATH], reference-rerank?model=PATH. Keys only via key_env=VAR. See docs/endpoints.md."
)


@app.command()
def identity(
    endpoint: Annotated[list[str], typer.Option("--endpoint", "-e", help=SPEC_HELP)],
    texts: Annotated[Optional[Path], typer.Option("--texts", help="Texts: one per line, or .jsonl of strings / {\"text\"}.")] = None,
    dataset: Annotated[Optional[Path], typer.Option("--dataset", help="A dataset folder (BEIR: corpus.jsonl + queries.jsonl).")] = None,
    reference: Annotated[Optional[str], typer.Option("--reference", help="Compare every endpoint with this one only.")] = None,
    dtype: Annotated[Optional[str], typer.Option("--dtype", help="Thresholds for float32|float16|bfloat16|int8 (default: reported by the endpoints, else float32).")] = None,
    tokenizer: Annotated[Optional[Path], typer.Option("--tokenizer", help="Model folder with tokenizer.json for token-length buckets.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="Use only the first N texts.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Output folder: results.jsonl (schema ragbench.results), report.md, report.html. "
                                                "A FILE.json instead writes the older single JSON document (schema ragbench.identity v1).")] = None,
) -> None:
    """Send the same texts through every endpoint and compare: cosine, norms, neighbours, order, causes."""
    from bench.progress import progress_bars
    from bench.endpoints.spec import parse_spec
    from bench.errors import UserError
    from bench.identity import IdentityRequest, from_dataset, from_texts, run_identity
    from bench.identity.report import render
    from bench.identity.results import identity_results
    from bench.report import write_outputs
    from bench.secrets import mask, mask_data

    if (texts is None) == (dataset is None):
        raise UserError("identity: give exactly one of --texts FILE or --dataset PATH")
    specs = [parse_spec(s) for s in endpoint]
    inputs = from_texts(texts, limit) if texts is not None else from_dataset(dataset, limit)
    request = IdentityRequest(specs, inputs, reference=reference, dtype=dtype, tokenizer=tokenizer)
    if sys.stderr.isatty():
        with progress_bars() as bars:
            report = run_identity(request, advance=bars("identity: texts through every endpoint", len(inputs.texts)))
    else:  # a bar's last frame on a log or pipe would only bury the one-line error that may follow
        report = run_identity(request)
    results = identity_results(report, (out or Path(".")) / "results.jsonl")
    typer.echo(mask(render(results)))
    if out is not None and out.suffix == ".json":  # the format before results.jsonl, kept for existing users
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(mask_data(report.to_dict()), indent=2))
        typer.echo(f"report: {out}")
    elif out is not None:
        typer.echo(f"report: {write_outputs(results)}")
    if not report.passed:
        raise typer.Exit(1)
