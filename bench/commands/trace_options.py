"""The options of `load --trace` and `size --trace`: checked by the very functions that check `load` and `size`
(`sweep_of`, `check_values`), and every option the trace path does not take refused by name (exit 2), never
ignored: a `--requests-csv`, `--interleave` or `--min-throughput-ratio` given to a replay would otherwise leave
no CSV and no gate, exit 0.

    check_load_trace(request)   # before the trace is read or --out touched
"""

from __future__ import annotations

import dataclasses
from typing import Any

from bench.commands.load import sweep_of
from bench.commands.load_request import LoadRequest
from bench.commands.options import declared_fields, flag_of
from bench.commands.size import SizeRequest, check_values
from bench.core.errors import UserError
from bench.load.points import PointConfig
from bench.sizing.slo import Slo

# What each trace path reads of its request; every other option is refused when given.
LOAD_TRACE_TAKES = frozenset(
    {"endpoints", "out", "texts", "dataset", "tokenizer", "timeout", "overwrite", "trace", "speed", "loop", "route"}
    | {"duration"}  # with --loop: how long the trace is played again
)
SIZE_TRACE_TAKES = frozenset(
    {"endpoints", "out", "texts", "dataset", "tokenizer", "timeout", "overwrite", "trace", "route", "target_speed"}
    | {"slo", "slo_p99_ms", "max_time", "max_error_rate", "max_probes"}
)


def given_but_not_taken(request: object, takes: frozenset[str]) -> list[str]:
    """The flags given (a value other than the field's default) that the trace path does not read."""
    given = []
    for f in declared_fields(type(request)):
        if f.name in takes:
            continue
        default: Any = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if default is dataclasses.MISSING or getattr(request, f.name) == default:
            continue
        flag = flag_of(f)
        given.append(flag.names[0] if flag is not None else f.name)
    return given


def refuse_not_taken(request: object, takes: frozenset[str], command: str) -> None:
    given = given_but_not_taken(request, takes)
    if given:
        raise UserError(
            f"{command} --trace: {', '.join(given)} not taken with --trace (the trace sets the arrivals, texts and "
            "lengths; see docs/traffic.md)"
        )


def check_load_trace(request: LoadRequest) -> PointConfig:
    """`load --trace`'s options: none it would ignore, and each it takes checked as `load` checks it; the point
    its --duration and --timeout were parsed into."""
    refuse_not_taken(request, LOAD_TRACE_TAKES, "load")
    if request.duration is not None and not request.loop:
        raise UserError("load --trace: --duration is how long --loop plays the trace again; give --loop too")
    return sweep_of(request, False).base  # --timeout, --duration: load's own checks, ranges and words


def check_size_trace(request: SizeRequest) -> tuple[Slo, float | None]:
    """`size --trace`'s options: none it would ignore (`--workers`, `--tolerance`, ...), each it takes checked
    by `size`'s own check (`check_values`: `--max-error-rate`, `--max-probes`, the SLO, `--max-time`)."""
    refuse_not_taken(request, SIZE_TRACE_TAKES, "size")
    return check_values(request)
