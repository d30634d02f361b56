"""`ragbench size`: the saturation rate under a latency SLO and the TEI / Open WebUI settings for it
(docs/sizing.md). Its options are `SizeRequest`'s declared fields (bench/commands/size.py); --out, the folder it
writes, is the command line's own."""

from __future__ import annotations

from pathlib import Path

from bench.cli.declared import command
from bench.cli.options import out_folder
from bench.commands.size import SizeRequest


def size(request: SizeRequest) -> None:
    from bench.commands.size_console import size_with_console

    if request.trace is not None:
        from bench.commands.size_trace import size_trace_command

        size_trace_command(request)
        return
    size_with_console(request)


command(
    "size",
    SizeRequest,
    size,
    "Closed-loop sweep, Open WebUI bursts, saturation search under the SLO, and the recommendation — always:\n"
    "on --max-time, Ctrl-C or SIGTERM the best so far (the interval between the highest steady pass and the lowest\n"
    "failure; a lower bound while none failed). Exit 3 when a point measured nothing or had no success.",
    extra=(("seed", out_folder(Path("reports/size"))),),
)
