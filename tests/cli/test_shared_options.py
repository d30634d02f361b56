"""The gate's options are declared once (bench/gate/options.py): `compare`, `history` and `run` list each shared
concept with one name, one help and one default; the older spelling `history --max-p99-ratio` still works."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
import typer.main

from bench.cli.app import app
from bench.cli.suite import GATE_KEYS
from bench.commands.gate_requests import HistoryRequest
from bench.commands.history import limits
from bench.core.errors import UserError
from bench.core.flags import declared_fields
from bench.gate.options import GateOptions


def _options(name: str) -> dict[str, Any]:
    """`ragbench NAME`'s click options by their first flag."""
    importlib.import_module(f"bench.cli.{name}_cmd")
    command = typer.main.get_group(app).commands[name]
    return {p.opts[0]: p for p in command.params if p.opts[0].startswith("--")}


SHARED = {  # flag -> the commands that take it
    "--max-drop": ("compare", "history"),
    "--min-throughput-ratio": ("compare", "history"),
    "--max-p99-increase": ("compare", "history"),
    "--history": ("compare", "run"),
    "--junit": ("compare", "run"),
    "--summary": ("compare", "run"),
    "--benchmark-json": ("compare", "run"),
}


@pytest.mark.parametrize("flag", SHARED)
def test_a_shared_option_has_one_help_and_default(flag):
    found = [_options(name)[flag] for name in SHARED[flag]]
    assert len({option.help for option in found}) == 1
    assert len({repr(option.default) for option in found}) == 1
    assert all(not option.hidden for option in found)


def test_history_names_the_p99_limit_as_compare_does_and_keeps_the_old_spelling_hidden():
    options = _options("history")
    assert options["--max-p99-ratio"].hidden
    assert "--max-p99-increase" in _options("compare")
    by_increase = limits(HistoryRequest(runs=["x"], max_p99_increase="10%")).max_p99_ratio
    assert by_increase == pytest.approx(limits(HistoryRequest(runs=["x"], max_p99_ratio="1.1")).max_p99_ratio)
    assert limits(HistoryRequest(runs=["x"], max_p99_increase="0.1")).max_p99_ratio == pytest.approx(1.1)
    with pytest.raises(UserError, match="--max-p99-increase '-1'"):
        limits(HistoryRequest(runs=["x"], max_p99_increase="-1"))


def test_the_suite_gate_keys_are_the_gate_options():
    suite_keys = {f.name for f in declared_fields(GateOptions) if f.name != "seed"}
    assert set(GATE_KEYS) == suite_keys
    assert GATE_KEYS["alpha"] == (float, int) and GATE_KEYS["significance"] is bool
