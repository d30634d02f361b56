"""docs/commands.md is generated from the Typer app (bench/cli/reference.py): it fails here while it is stale."""

from __future__ import annotations

from bench.cli.reference import REGENERATE, reference_markdown
from tests.paths import REPO


def test_the_committed_command_reference_is_what_the_cli_says_now():
    committed = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    assert committed == reference_markdown(), f"docs/commands.md is stale: run `{REGENERATE}`"


def test_the_reference_has_every_command_with_its_options_defaults_and_examples():
    page = reference_markdown()
    for heading in ("## `ragbench quality`", "## `ragbench datasets check`", "## `ragbench size`"):
        assert heading in page
    assert "| `--depth` | int | `100` |" in page  # quality's option, its type and default
    assert "ragbench demo --max-docs 200 --out reports/demo-small --overwrite" in page  # demo's examples
