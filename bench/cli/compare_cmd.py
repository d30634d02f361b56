"""`ragbench compare BASELINE CURRENT` (or `compare RUN`: an interleaved run, paired): the CI gate. Exit 0 pass,
1 regression, 2 usage or input error. Its options are the gate's (bench/gate/options.py), declared once."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.declared import command
from bench.commands.gate_requests import CompareRequest

Baseline = Annotated[Path, typer.Argument(help="Baseline results file or folder.")]
Current = Annotated[
    Path | None,
    typer.Argument(
        help="Current results file or folder. Left out: BASELINE is an interleaved run (load --interleave), gated "
        "on its own paired rounds."
    ),
]
_ARGUMENT = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _compare(request: CompareRequest) -> None:
    from bench.commands.compare import compare_command

    if not compare_command(request):
        raise typer.Exit(1)


command(
    "compare",
    CompareRequest,
    _compare,
    "Compare a run with its baseline check by check; exit 1 when something regressed.",
    extra=(
        ("", inspect.Parameter("baseline", _ARGUMENT, annotation=Baseline)),
        ("", inspect.Parameter("current", _ARGUMENT, default=None, annotation=Current)),
    ),
)
