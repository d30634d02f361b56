"""Options are declared once: the gate's (bench/gate/options.py) that `compare`, `history`, `run` and
`load --interleave` list, and those several commands share (bench/commands/options.py: the meter and `--keep` of grow
and ingest, a point's `--max-error-rate` of load and size, ...). One name, one meaning across commands: a name two
commands list has one help, or its help says each command's part of one meaning (OWN_HELP, each with why). The older
spelling `history --max-p99-ratio` still works."""

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
    "--min-throughput-ratio": ("compare", "history", "load"),
    "--max-p99-increase": ("compare", "history", "load"),
    "--max-error-rate": ("load", "size"),  # a point's own limit; compare's bound on its rise has its own name
    "--meter-upstream": ("grow", "ingest"),
    "--meter-host": ("grow", "ingest"),
    "--meter-port": ("grow", "ingest"),
    "--keep": ("grow", "ingest"),
    "--split": ("grow", "ingest", "quality"),
    "--slo": ("grow", "size"),
    "--route": ("load", "size"),
    "--resume": ("grow", "quality"),
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


# Names that several commands list with a help of their own: one meaning, each help saying the command's part of it.
OWN_HELP = {
    "--alpha": "a significance level: of a quality drop (compare), of a change point (history)",
    "--arrival": "open-loop arrivals: of load's points, of size's probes",
    "--batch": "texts per request: the sweep's values",
    "--burst": "texts of an Open WebUI ingestion burst",
    "--dataset": "the data set the command reads, each saying what it reads of it",
    "--documents": "rerank candidates per query",
    "--dtype": "the model's numeric type: run in it (ceiling), its thresholds (identity)",
    "--duration": "measured time per point",
    "--endpoint": "NAME=SPEC of an endpoint; quality's help says how its targets name it",
    "--format": "a format: of stdout (compare, history, evaluate), of the dataset read (datasets check)",
    "--lengths": "tokens per text",
    "--max-docs": "how many corpus documents are used",
    "--max-time": "the time budget of the run (load: of --interleave's rounds)",
    "--measure": "quality measures by name",
    "--out": "where the command writes",
    "--overwrite": "replace what an earlier run of the command wrote (only its own files)",
    "--record": "write the meter's trace here",
    "--seed": "the seed of the command's random draws",
    "--target": "[NAME=]SPEC of a target, with the kinds the command takes",
    "--timeout": "a per-request timeout (ingest's in seconds, load's and size's a duration)",
    "--tokenizer": "the model folder whose tokenizer counts tokens",
    "--trace": "a recorded trace (meter --record)",
    "--warmup": "warm-up per point, excluded",
}


def _every_command() -> dict[str, Any]:
    """Every command and subcommand (`datasets check`) by name, as Click sees it."""
    group = typer.main.get_group(app)
    context = typer.Context(group)
    found = {}
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        subcommands = getattr(command, "list_commands", None)
        for sub in subcommands(context) if subcommands else ():
            found[f"{name} {sub}"] = command.get_command(context, sub)  # type: ignore[union-attr]
        if not subcommands:
            found[name] = command
    return found


def test_a_name_several_commands_list_has_one_help_or_says_why_not():
    helps: dict[str, dict[str, str]] = {}  # flag -> command -> help
    for name, command in _every_command().items():
        for param in command.params:
            for flag in (o for o in param.opts if o.startswith("--") and not param.hidden):
                helps.setdefault(flag, {})[name] = param.help
    apart = {flag: by for flag, by in helps.items() if len(by) > 1 and len(set(by.values())) > 1}
    assert set(apart) <= set(OWN_HELP), {f: by for f, by in apart.items() if f not in OWN_HELP}
    assert all(len(helps[flag]) > 1 for flag in OWN_HELP), [f for f in OWN_HELP if len(helps.get(f, {})) < 2]


def test_a_hidden_option_is_an_old_spelling_of_a_listed_one():
    """Hidden: accepted for compatibility only (a rename's old name, or history's --max-p99-ratio)."""
    for name, command in _every_command().items():
        listed = {o for p in command.params if not p.hidden for o in p.opts}
        for param in (p for p in command.params if p.hidden):
            if param.opts == ["--max-p99-ratio"]:
                continue
            assert param.name.endswith("__old"), (name, param.opts)
            assert param.name.removesuffix("__old").replace("_", "-") in {o.lstrip("-") for o in listed}
