"""The command reference, generated from the Typer app itself: every command, argument, option, default and help.

`python -m bench.cli.reference docs/commands.md` rewrites the committed page; tests/docs/test_reference.py fails
while the committed page differs from what this module writes now."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import typer.main

from bench.cli.app import COMMANDS, app
from bench.cli.examples import add_examples, epilog

REGENERATE = "python -m bench.cli.reference docs/commands.md"
_HEADER = f"""# Command reference

Generated from the command line itself by `{REGENERATE}` (a test fails while this page is
stale): every command,
its arguments and options with their defaults and help, and its examples. Exit codes: [exit codes](exit-codes.md).
"""


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(param: Any) -> str:
    if getattr(param, "required", False):
        return "required"
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        return f"`{shown}`"
    default = param.default
    if default is None or default == () or default == []:
        return ""
    if callable(default):
        return ""
    if isinstance(default, list | tuple):
        return f"`{', '.join(map(str, default))}`"
    return f"`{default}`"


def _type(param: Any) -> str:
    """The value's type as `--help` shows it, with its bounds."""
    if getattr(param, "is_flag", False):
        return "flag"
    bounds = [f"≥ {param.min}"] if getattr(param, "min", None) is not None else []
    bounds += [f"≤ {param.max}"] if getattr(param, "max", None) is not None else []
    return _cell(" ".join([param.bare_type(), *bounds]))


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{(param.metavar or param.name).upper()}`"
    return ", ".join(f"`{name}`" for name in [*param.opts, *param.secondary_opts])


def _params_table(command: Any) -> list[str]:
    rows = [
        f"| {_names(p)} | {_type(p)} | {_default(p)} | {_cell(getattr(p, 'help', None) or '')} |"
        for p in command.params
        if not getattr(p, "hidden", False) and p.name not in ("install_completion", "show_completion")
    ]
    if not rows:
        return []
    return ["| argument or option | type | default | help |", "|---|---|---|---|", *rows, ""]


def _section(path: str, command: Any) -> list[str]:
    lines = [f"## `ragbench {path}`", "", (command.help or "").strip(), ""]
    subcommands = getattr(command, "commands", {})
    if not subcommands:
        lines += _params_table(command)
    text = epilog(path) if command.epilog is None else command.epilog
    if text:
        examples = [e for e in text.split("\n\n")[1:] if e.strip()]
        lines += ["Examples:", "", "```bash", *examples, "```", ""]
    for name in sorted(subcommands):
        lines += _section(f"{path} {name}", subcommands[name])
    return lines


def reference_markdown() -> str:
    """The whole page: the root's options, then each command in `ragbench --help`'s order."""
    modules = {listed.module for listed in COMMANDS.values()}
    for module in sorted(modules):
        importlib.import_module(f"bench.cli.{module}")
    group = typer.main.get_group(app)
    lines = [_HEADER]
    lines += [
        "## `ragbench`",
        "",
        "Options of `ragbench` itself: `--version`, `--install-completion` and `--show-completion` (bash, zsh, fish,"
        " PowerShell, as Typer provides them), `--help`.",
        "",
    ]
    for name in COMMANDS:
        command = group.commands[name]
        add_examples(name, command)
        lines += _section(name, command)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: {REGENERATE}", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(reference_markdown(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
