"""`ragbench load`: throughput and latency of embed / rerank endpoints (docs/load.md). Its options are
`LoadRequest`'s declared fields (bench/commands/load.py); --out, the folder it writes, is the command line's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from bench.cli.declared import command
from bench.cli.options import out_folder
from bench.commands.load import LoadRequest


def load(options: dict[str, Any]) -> None:
    from bench.commands.load import load_command
    from bench.core.errors import EXIT_CHECK_FAILED
    from bench.load.points import ERRORS

    records = load_command(LoadRequest(**options))
    if any(r.status == ERRORS for r in records):  # a point past --max-error-rate: a check that failed
        raise typer.Exit(EXIT_CHECK_FAILED)


command(
    "load",
    LoadRequest,
    load,
    "Measure throughput and latency over a sweep of batch x concurrency, offered rates, or bursts.\n"
    "Exit 0 every point measured within --max-error-rate, 1 a point past it, 3 a point measured nothing or had no\n"
    "success.",
    extra=(("seed", out_folder(Path("reports/load"))),),
)
