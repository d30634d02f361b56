"""`ragbench --help` lists the commands from bench/cli/app.py's table without importing any command module (they
import numpy, scipy, torch); `ragbench X` imports X's module only. The table's help is each command's own."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import typer.main

import bench.cli
from bench.cli.app import COMMANDS, app

_HEAVY = ("numpy", "scipy", "torch", "pandas")


def _imported_by(*argv: str) -> set[str]:
    """The modules a `ragbench ARGV` process had imported when it ended."""
    script = (
        "import sys\nfrom bench.cli import main\n"
        f"sys.argv = ['ragbench', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(done.stderr.split())


def test_the_table_lists_each_command_with_its_own_help():
    # every command module there is, so that one missing from the table fails here
    for module in (Path(bench.cli.__file__).parent).glob("*_cmd.py"):
        importlib.import_module(f"bench.cli.{module.stem}")
    registered = typer.main.get_group(app).commands
    assert set(registered) == set(COMMANDS)
    for name, command in registered.items():
        first_paragraph = (command.short_help or command.help or "").split("\n\n")[0]
        assert COMMANDS[name].help == " ".join(first_paragraph.split()), name


def test_help_imports_no_command_module_and_no_engine():
    imported = _imported_by("--help")
    assert "bench.cli.app" in imported  # the probe saw the CLI
    assert not {m for m in imported if m.startswith("bench.cli.") and m.endswith("_cmd")}
    assert not imported & set(_HEAVY)


def test_a_command_imports_its_own_module_only():
    imported = _imported_by("evaluate", "--help")
    assert {m for m in imported if m.startswith("bench.cli.") and m.endswith("_cmd")} == {"bench.cli.evaluate_cmd"}


def test_evaluate_imports_no_scipy_torch_pandas_or_httpx(tmp_path):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    imported = _imported_by("evaluate", str(qrels), str(run))
    assert "bench.quality.evaluation" in imported  # it scored the run
    assert not imported & {"scipy", "torch", "pandas", "httpx"}  # httpx: the targets, not evaluate
