"""The command line's own options, which are no request's field: `--out` of the derived commands (load, size,
ceiling), each with its default folder, and `--label` of the hand-written ones (demo, run). Every other option is
declared on its request's field (bench/commands/options.py)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.declared import typer_option
from bench.commands.options import LABELS

Out = Annotated[Path, typer.Option("--out", help="Output folder.")]
Labels = Annotated[list[str] | None, typer_option(LABELS)]


def out_folder(default: Path) -> inspect.Parameter:
    """`--out`, the folder a derived command writes, with its default (an `extra` of bench.cli.declared.command)."""
    return inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Out)
