"""`ragbench --version`, shell completion as Typer provides it, and examples at the end of each command's help
(issue 46)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import bench
from bench.cli.app import COMMANDS
from bench.cli.examples import EXAMPLES
from tests.harness.cli import run_cli

# The commands whose --help ends with examples (every one).
WITH_EXAMPLES = sorted(path for path in EXAMPLES if path)


def test_every_other_command_has_examples():
    groups = {path.split()[0] for path in WITH_EXAMPLES}
    assert set(COMMANDS) == groups


def test_version_prints_the_version_every_results_header_records(monkeypatch, capsys):
    code, out, _ = run_cli(["--version"], monkeypatch, capsys)
    assert code == 0 and out == f"ragbench {bench.__version__}\n"


def test_help_offers_shell_completion(monkeypatch, capsys):
    code, out, _ = run_cli(["--help"], monkeypatch, capsys)
    assert code == 0 and "--install-completion" in out and "--show-completion" in out and "--version" in out


@pytest.mark.parametrize("path", WITH_EXAMPLES)
def test_a_commands_help_ends_with_its_examples(path, monkeypatch, capsys):
    code, out, _ = run_cli([*path.split(), "--help"], monkeypatch, capsys)
    tail = " ".join(out.split()[-60:])  # the help's last lines, however the terminal wrapped them
    assert code == 0 and "Examples:" in out
    assert 2 <= len(EXAMPLES[path]) <= 3
    last = EXAMPLES[path][-1].split()
    assert " ".join(last[:4]) in tail, out


def test_completing_a_command_name_imports_no_command_module():
    script = (
        "import sys\nfrom bench.cli import main\nsys.argv = ['ragbench']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
    )
    env = {**os.environ, "_RAGBENCH_COMPLETE": "complete_bash", "COMP_WORDS": "ragbench qu", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == ["quality"]
    assert not {m for m in done.stderr.split() if m.startswith("bench.cli.") and m.endswith("_cmd")}
