"""`ragbench doctor`: one line per finding with its fix; exit 1 when something is wrong."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.cli.app import app


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
) -> None:
    """Probe each hop with tiny requests; print what is wrong and how to fix it."""
    from bench.core.errors import UserError
    from bench.core.secrets import mask
    from bench.doctor.probes import DoctorRequest, finding_line, findings_json, run_doctor
    from bench.report import write_outputs
    from bench.results.outdir import RESULTS_FILE, is_document, prepare_out
    from bench.results.store import complete_results

    if not any((openwebui, tei, litellm, lightrag)):
        raise UserError("doctor: give at least one of --openwebui, --tei, --litellm, --lightrag")
    for name, url in (("--openwebui", openwebui), ("--tei", tei), ("--litellm", litellm), ("--lightrag", lightrag)):
        if url is not None and not url.startswith(("http://", "https://")):
            raise UserError(f"doctor: {name} {url!r} is not an http(s) URL")
    if out is not None:  # refused like every command's --out, before any probe
        prepare_out(out, [], overwrite)
    findings = run_doctor(DoctorRequest(openwebui=openwebui, tei=tei, litellm=litellm, lightrag=lightrag))
    for finding in findings:
        typer.echo(finding_line(finding))
    problems = sum(not f.ok for f in findings)
    typer.echo(f"{problems} problem(s) found" if problems else "no problems found")
    if out is not None and is_document(out):  # the format before results.jsonl, kept for existing users
        out.write_text(mask(findings_json(findings)))
    elif out is not None:
        typer.echo(f"report: {write_outputs(complete_results(out / RESULTS_FILE, 'doctor', findings))}")
    if problems:
        raise typer.Exit(1)
