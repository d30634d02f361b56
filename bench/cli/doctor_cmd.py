"""`ragbench doctor`: one line per finding with its fix; exit 1 when something is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app
from bench.cli.options import Labels


@app.command()
def doctor(
    openwebui: Annotated[
        str | None, typer.Option("--openwebui", help="Open WebUI base URL (key from $OPENWEBUI_API_KEY).")
    ] = None,
    tei: Annotated[str | None, typer.Option("--tei", help="TEI base URL (key, if any, from $TEI_API_KEY).")] = None,
    litellm: Annotated[
        str | None, typer.Option("--litellm", help="LiteLLM proxy base URL (key from $LITELLM_API_KEY).")
    ] = None,
    lightrag: Annotated[str | None, typer.Option("--lightrag", help="LightRAG server base URL.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Output folder: results.jsonl (schema ragbench.results), report.md, report.html. "
            "A FILE.json instead writes the findings as one JSON document (schema ragbench.doctor v1).",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an earlier run in --out (only ragbench's files).")
    ] = False,
    labels: Labels = None,
) -> None:
    """Probe each hop with tiny requests; print what is wrong and how to fix it."""
    from bench.commands.doctor import DoctorCommand, doctor_command
    from bench.results.provenance import Origin, parse_labels

    command = DoctorCommand(
        openwebui=openwebui,
        tei=tei,
        litellm=litellm,
        lightrag=lightrag,
        out=out,
        overwrite=overwrite,
        origin=Origin(parse_labels(labels)),
    )
    if not all(f.ok for f in doctor_command(command, say=typer.echo)):
        raise typer.Exit(1)
