"""`ragbench load`: throughput and latency of embed / rerank endpoints (docs/load.md). Its options are
`LoadRequest`'s declared fields (bench/commands/load.py); --out, the folder it writes, is the command line's own."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from bench.cli.declared import command
from bench.cli.options import out_folder
from bench.commands.load_request import LoadRequest


def load(request: LoadRequest) -> None:
    started = time.monotonic()  # --max-time counts from here: the job's budget, its start-up included
    from bench.commands.load import check_load, load_command
    from bench.core.errors import EXIT_CHECK_FAILED
    from bench.load.points import ERRORS

    if request.trace is not None:
        from bench.commands.load_trace import trace_command

        if not trace_command(request):
            raise typer.Exit(EXIT_CHECK_FAILED)
        return
    plan = check_load(request)  # every spec and flag parsed once, here: the run takes the plan
    if request.interleave:
        from bench.commands.interleave import interleave_command, judged_failed

        records, pairs = interleave_command(request, started, plan)
        failed = judged_failed(pairs, request.too_busy)  # compare's verdict: exit 1, as compare does
    else:
        records, failed = load_command(request, plan), False
    if failed or any(r.status == ERRORS for r in records):  # a point past --max-error-rate: a check that failed
        raise typer.Exit(EXIT_CHECK_FAILED)


command(
    "load",
    LoadRequest,
    load,
    "Measure throughput and latency over a sweep of batch x concurrency, offered rates, or bursts.\n"
    "Exit 0 every point measured within --max-error-rate, 1 a point past it (--interleave: or the verdict fails;\n"
    "--max-time: or 'too busy to decide' with --too-busy fail),\n"
    "3 a point measured nothing or had no success.",
    extra=(("seed", out_folder(Path("reports/load"))),),
)
