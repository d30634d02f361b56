"""The plain function behind `ragbench doctor`: check the URLs (one line, exit 2), prepare --out like every other
command, probe each hop, print one line per finding, write the results and report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import OVERWRITE, Flag, option, out_flag
from bench.core.errors import UserError
from bench.core.secrets import mask
from bench.doctor.run import DoctorRequest, finding_line, findings_json, run_doctor
from bench.report import write_report
from bench.results.frame import plain_header
from bench.results.lifecycle import Output, open_run
from bench.results.outdir import is_document, prepare_out_document
from bench.results.provenance import Origin
from bench.results.schema import DoctorFinding, RunCommand


def _url(flag: str, help: str) -> dict[str, Flag]:
    return option(Flag((flag,), help, suite=False))


@dataclass
class DoctorCommand:
    """`ragbench doctor`'s options, each declared once, here."""

    openwebui: str | None = field(
        default=None, metadata=_url("--openwebui", "Open WebUI base URL (key from $OPENWEBUI_API_KEY).")
    )
    tei: str | None = field(default=None, metadata=_url("--tei", "TEI base URL (key, if any, from $TEI_API_KEY)."))
    litellm: str | None = field(
        default=None, metadata=_url("--litellm", "LiteLLM proxy base URL (key from $LITELLM_API_KEY).")
    )
    lightrag: str | None = field(default=None, metadata=_url("--lightrag", "LightRAG server base URL."))
    # a folder (results.jsonl and its report), or FILE.json (schema ragbench.doctor v1)
    out: Path | None = field(
        default=None,
        metadata=option(out_flag("the findings as one JSON document (schema ragbench.doctor v1)")),
    )
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance


def check_doctor(command: DoctorCommand) -> DoctorRequest:
    urls = {"--openwebui": command.openwebui, "--tei": command.tei, "--litellm": command.litellm}
    urls["--lightrag"] = command.lightrag
    if not any(urls.values()):
        raise UserError("doctor: give at least one of --openwebui, --tei, --litellm, --lightrag")
    for name, url in urls.items():
        if url is not None and not url.startswith(("http://", "https://")):
            raise UserError(f"doctor: {name} {url!r} is not an http(s) URL")
    return DoctorRequest(
        openwebui=command.openwebui, tei=command.tei, litellm=command.litellm, lightrag=command.lightrag
    )


def doctor_command(command: DoctorCommand, say: Callable[[str], None] = print) -> list[DoctorFinding]:
    """Every finding; `--out` refused like every command's, before any probe."""
    request = check_doctor(command)
    if command.out is None or is_document(command.out):
        if command.out is not None:  # FILE.json: one JSON document (schema ragbench.doctor v1)
            prepare_out_document(command.out, command.overwrite)
        findings = _probe(request, say)
        if command.out is not None:
            command.out.write_text(mask(findings_json(findings)))
        return findings
    output = Output(command.out, command.overwrite, report=write_report, say=say, origin=command.origin)
    with open_run(output, plain_header(RunCommand.DOCTOR)) as run:
        findings = _probe(request, say)
        run.write(*findings)  # the findings are the results file's records
    return findings


def _probe(request: DoctorRequest, say: Callable[[str], None]) -> list[DoctorFinding]:
    findings = run_doctor(request)
    for finding in findings:
        say(finding_line(finding))
    problems = sum(not f.ok for f in findings)
    say(f"{problems} problem(s) found" if problems else "no problems found")
    return findings
