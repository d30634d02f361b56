"""`ragbench doctor`: one line per finding with its fix; exit 1 when something is wrong. Its options are
`DoctorCommand`'s declared fields (bench/commands/doctor.py)."""

from __future__ import annotations

import typer

from bench.cli.declared import command
from bench.commands.doctor import DoctorCommand


def doctor(request: DoctorCommand) -> None:
    from bench.commands.doctor import doctor_command
    from bench.core.errors import EXIT_CHECK_FAILED

    if not all(f.ok for f in doctor_command(request, say=typer.echo)):
        raise typer.Exit(EXIT_CHECK_FAILED)


command("doctor", DoctorCommand, doctor, "Probe each hop with tiny requests; print what is wrong and how to fix it.")
