"""Each suite entry checked by its command's own checks: every value by the command-line option of the same
name (its type and bounds, declared once), then the whole request by the function the command runs."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from typing import Any

import typer

from bench.cli.suite.lines import SuiteText, Where, label
from bench.commands.suite import Plan
from bench.core.errors import UserError

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@functools.cache
def _cli_command(name: str) -> Any:
    """`ragbench NAME` as Click sees it: its options with their types and bounds."""
    from bench.cli.app import app

    # The lazy group imports NAME's module (which registers it) and answers its Click command.
    return typer.main.get_group(app).get_command(typer.Context(typer.main.get_group(app)), name)


@functools.cache
def _keys_of_flags(command: str) -> dict[str, str]:
    """`ragbench COMMAND`'s long flags as words (max_inflight, measure) -> the suite key each sets."""
    return {
        opt.lstrip("-").replace("-", "_"): param.name
        for param in _cli_command(command).params
        for opt in param.opts
        if opt.startswith("--")
    }


def option(text: SuiteText, command: str, key: str, value: Any, where: Where) -> None:
    """`value` checked by `ragbench COMMAND`'s option of the same name: a suite file gets exactly the checks
    the command line does."""
    cli = _cli_command(command)
    param = next((p for p in cli.params if p.name == key), None)
    if param is None:
        return
    try:
        param.process_value(typer.Context(cli), value)
    except typer.BadParameter as exc:
        raise text.error(f"{label((*where, key))} = {value!r}: {exc.message}", *where, key) from None


def checked(text: SuiteText, check: Callable[[], Plan], keys: Collection[str], where: Where) -> Plan:
    """The command's own check of the whole request (the one its CLI runs), and what it made of it (its plan);
    the error at the one of `keys` (the entry's) it names. `where` is the entry: (COMMAND, index)."""
    try:
        return check()
    except UserError as exc:
        named = _named_key(str(exc), keys, str(where[0]))
        raise text.error(f"{label(where)}: {exc}", *where, *named) from None


def _named_key(message: str, entry: Collection[str], command: str) -> tuple[str, ...]:
    """The first of the entry's keys that an error message names (`--max-inflight` names max_inflight)."""
    keys = _keys_of_flags(command)
    for word in _WORD.findall(message):
        key = word.replace("-", "_")
        key = keys.get(key, key)
        if key in entry:
            return (key,)
    return ()
