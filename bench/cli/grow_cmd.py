"""`ragbench grow`: a knowledge base grown in rungs through each target. Its options are `GrowRequest`'s declared
fields (bench/commands/grow.py); --out and --resume, which choose its folder, are the command line's own."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from bench.cli.declared import command
from bench.commands.grow import GrowRequest

Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/grow).")]
Resume = Annotated[
    Path | None,
    typer.Option("--resume", help="Continue the interrupted run in this folder (same options) after its last rung."),
]


def grow(options: dict[str, Any]) -> None:
    from bench.commands.grow import grow_command
    from bench.core.errors import UserError

    out, resume = options.pop("out"), options.pop("resume")
    if resume is not None and out is not None and out != resume:
        raise UserError(f"--resume {resume} writes into that folder; drop --out {out}")
    if resume is not None and options["overwrite"]:
        raise UserError("--resume continues a run, --overwrite replaces it: give one of them")
    folder = resume or out or Path("reports/grow")
    grow_command(GrowRequest(**options, out=folder, resume=resume is not None))


def _cli_only(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


HELP = (
    "Grow one knowledge base in rungs (the query set's documents, then distractors) through each target: ingest "
    "rate, latency p50/p99, nDCG@10 and R@100 per rung; the first rung that fails or breaks --slo, the latency's "
    "growth law and the size it reaches the SLO at."
)
command(
    "grow",
    GrowRequest,
    grow,
    HELP,
    extra=(("rungs", _cli_only("out", Out)), ("overwrite", _cli_only("resume", Resume))),
)
