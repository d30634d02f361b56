"""`ragbench grow`: a knowledge base grown in rungs through each target. Its options are `GrowRequest`'s declared
fields (bench/commands/grow.py); --out and --resume, which choose its folder, are the command line's own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.declared import command
from bench.cli.options import Resume, cli_only, resumable
from bench.commands.grow import GrowRequest

Out = Annotated[Path | None, typer.Option("--out", help="Output folder (default reports/grow).")]


def grow(request: GrowRequest) -> None:
    from bench.commands.grow import grow_command

    grow_command(request)


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
    extra=(("rungs", cli_only("out", Out)), ("overwrite", cli_only("resume", Resume))),
    build=resumable(GrowRequest, Path("reports/grow")),
)
