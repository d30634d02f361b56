"""`ragbench ceiling`: the reference model's in-process throughput and FLOP/s against the device's peak. Its
options are `CeilingRequest`'s declared fields (bench/commands/ceiling.py); --out, the folder it writes, is the
command line's own."""

from __future__ import annotations

from pathlib import Path

from bench.cli.declared import command
from bench.cli.options import out_folder
from bench.commands.ceiling import CeilingRequest


def ceiling(request: CeilingRequest) -> None:
    from bench.commands.ceiling import ceiling_command

    ceiling_command(request)


command(
    "ceiling",
    CeilingRequest,
    ceiling,
    "In-process texts/s, tokens/s and achieved FLOP/s of the reference model per length and batch.",
    extra=(("seconds", out_folder(Path("reports/ceiling"))),),
)
