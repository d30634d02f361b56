"""`ragbench report`: report.md and report.html rebuilt from results files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app


@app.command()
def report(
    results: Annotated[
        Path,
        typer.Argument(
            help="A results.jsonl (quality, demo, identity, doctor, ...) or a folder: every results.jsonl below it."
        ),
    ],
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: beside the results).")] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the report files already in another --out folder.")
    ] = False,
) -> None:
    """Rebuild report.md and report.html (and plots, per_query.csv) from results files."""
    from bench.report import write_reports

    for path in write_reports(results, out, overwrite):
        typer.echo(f"report: {path}")
