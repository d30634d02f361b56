"""`ragbench identity`: the same texts through every endpoint; exit 1 when a pair fails. Its options are
`IdentityCommand`'s declared fields (bench/commands/identity.py)."""

from __future__ import annotations

import typer

from bench.cli.declared import command
from bench.commands.identity import IdentityCommand


def identity(request: IdentityCommand) -> None:
    from bench.commands.identity import identity_command
    from bench.core.errors import EXIT_CHECK_FAILED

    if not identity_command(request, say=typer.echo).passed:
        raise typer.Exit(EXIT_CHECK_FAILED)


command(
    "identity",
    IdentityCommand,
    identity,
    "Send the same texts through every endpoint and compare: cosine, norms, neighbours, order, causes.",
)
