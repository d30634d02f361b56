"""Options that several commands share, declared once as Typer `Annotated` aliases.

A wrapper writes `workers: Workers = 1`: the flag, its type and help live here; the default stays beside the
command, where it differs (`--out`) or is part of that command's contract. An option only one command has is
declared at the top of that command's module, the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

SPEC_HELP = (
    "NAME=KIND@URL[?option=value&...]; repeat. Kinds: tei, tei-rerank, openai (model=), cohere, "
    "reference[?model=PATH], reference-rerank?model=PATH. Keys only via key_env=VAR. See docs/endpoints.md."
)

# identity, load, size: the endpoints measured
Endpoints = Annotated[list[str], typer.Option("--endpoint", "-e", help=SPEC_HELP)]
Texts = Annotated[Path | None, typer.Option("--texts", help='Texts: one per line, or .jsonl of strings / {"text"}.')]

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
Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
]
Labels = Annotated[
    list[str] | None,
    typer.Option(
        "--label",
        help=(
            "NAME=VALUE written into the results header (commit=…, branch=…, stack=…); repeat. In CI, commit, "
            "branch and ci_run come from GitHub Actions' or GitLab's variables unless given."
        ),
    ),
]
