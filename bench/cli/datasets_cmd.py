"""`ragbench datasets check PATH [--split S]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.declared import typer_option
from bench.commands.options import SPLIT

datasets_app = typer.Typer(help="Load and validate reference query/answer sets.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")


@datasets_app.command("check")
def check(
    path: Annotated[Path, typer.Argument(help="BEIR folder, TREC folder, or JSONL Q&A file/folder.")],
    split: Annotated[str | None, typer_option(SPLIT)] = None,
    format: Annotated[str | None, typer.Option("--format", help="beir, trec or jsonl (default: detected).")] = None,
) -> None:
    """Validate a dataset and print its counts; soft problems are listed, hard ones exit with code 2."""
    from bench.datasets import check_dataset, load_dataset

    report = check_dataset(load_dataset(path, split=split, format=format))
    typer.echo(f"{path}: ok")
    for line in report.lines():
        typer.echo(f"  {line}")
