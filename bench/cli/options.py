"""Typer `Annotated` aliases of options that several hand-written commands share (load, size, ceiling).

A wrapper writes `workers: Workers = 1`: the flag, its type and help live here; the default stays beside the
command, where it differs (`--out`) or is part of that command's contract. A command derived from its request
(bench/cli/declared.py) takes its options from the request's declared fields instead.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.declared import typer_option
from bench.commands.options import ENDPOINTS, LABELS, OVERWRITE, TEXTS

# load, size: the endpoints measured (declared in bench/commands/options.py)
Endpoints = Annotated[list[str], typer_option(ENDPOINTS)]
Texts = Annotated[Path | None, typer_option(TEXTS)]

# load, size: the client
Op = Annotated[str, typer.Option("--op", help="embed or rerank (default: from the endpoint kind).")]
Workers = Annotated[int, typer.Option("--workers", help="Client processes, one event loop each.")]
Timeout = Annotated[str, typer.Option("--timeout", help="Per-request timeout.")]
ArrivalSeed = Annotated[int, typer.Option("--seed", help="Seed for poisson/gamma arrivals.")]
Ray = Annotated[
    str | None,
    typer.Option(
        "--ray",
        help=(
            "Run the --workers as Ray actors on a cluster: auto, "
            "or the head's host:port (pip install 'ragbench[ray]'; docs/sizing.md)."
        ),
    ),
]

# every command that writes a results folder
Out = Annotated[Path, typer.Option("--out", help="Output folder.")]


def out_folder(default: Path) -> inspect.Parameter:
    """`--out`, the folder a derived command writes (the command line's own option), with its default."""
    return inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Out)


Overwrite = Annotated[bool, typer_option(OVERWRITE)]
Labels = Annotated[list[str] | None, typer_option(LABELS)]
