"""The Typer application object that every command module registers on."""

import typer

app = typer.Typer(
    name="ragbench",
    help="Benchmark RAG retrieval stacks: datasets, quality, identity, load, reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
