"""`ragbench history RUN...`: every run of a suite as series, their change points. Exit 0 pass, 1 the newest run
starts a change point, or is out of line, past a limit, 2 usage or input error. `--max-drop`,
`--min-throughput-ratio` and `--max-p99-increase` are the gate's (bench/gate/options.py)."""

from __future__ import annotations

import inspect
from typing import Annotated

import typer

from bench.cli.declared import command
from bench.commands.gate_requests import HistoryRequest

Runs = Annotated[list[str], typer.Argument(help="Results files, folders (searched for results.jsonl) or globs.")]


def _history(request: HistoryRequest) -> None:
    from bench.commands.history import history_command

    if not history_command(request):
        raise typer.Exit(1)


command(
    "history",
    HistoryRequest,
    _history,
    "Every run of a suite as series: change points, sizes, p-values; exit 1 when the newest run starts one past a "
    "limit, or is out of line with the runs since the last one and past a limit.",
    extra=(("", inspect.Parameter("runs", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Runs)),),
)
