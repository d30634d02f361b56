"""`ragbench doctor`: probe each hop of an Open WebUI -> LiteLLM -> TEI stack with tiny requests.

Most failures in such a stack raise no error: a reranker that fails is skipped (Open WebUI falls back to
unreranked results), a wrong body shape is a 422 nobody reads, an unlimited embedding fan-out turns into
429s. Every probe here sends what the upstream component really sends and names the fix for what it finds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from bench.core.http import HttpClient, key_from_env
from bench.doctor.lightrag import check_lightrag
from bench.doctor.litellm import check_litellm
from bench.doctor.openwebui import check_openwebui
from bench.doctor.probe import Facts
from bench.doctor.tei import check_tei
from bench.results.schema import DOCTOR_DOCUMENT, DoctorFinding


def finding_line(finding: DoctorFinding) -> str:
    mark = "ok " if finding.ok else "BAD"
    return f"[{mark}] {finding.hop}: {finding.message}" + (f" -> fix: {finding.fix}" if finding.fix else "")


@dataclass
class DoctorRequest:
    openwebui: str | None = None
    tei: str | None = None
    litellm: str | None = None
    lightrag: str | None = None
    openwebui_key_env: str = "OPENWEBUI_API_KEY"
    litellm_key_env: str = "LITELLM_API_KEY"
    tei_key_env: str = "TEI_API_KEY"
    timeout_s: float = 30.0


def _env_key(name: str | None) -> str | None:
    return key_from_env("doctor", name, required=False)


def run_doctor(request: DoctorRequest) -> list[DoctorFinding]:
    """Every finding, in hop order: TEI first (its limits inform the others), then LiteLLM, Open WebUI, LightRAG."""
    facts = Facts()
    findings: list[DoctorFinding] = []
    client = HttpClient("doctor", timeout_s=request.timeout_s)
    try:
        if request.tei:
            findings += check_tei(client, request.tei, _env_key(request.tei_key_env), facts)
        if request.litellm:
            findings += check_litellm(
                client, request.litellm, _env_key(request.litellm_key_env), request.litellm_key_env
            )
        if request.openwebui:
            findings += check_openwebui(
                client, request.openwebui, _env_key(request.openwebui_key_env), request.openwebui_key_env, facts
            )
        if request.lightrag:
            findings += check_lightrag(client, request.lightrag)
    finally:
        client.close()
    return findings


def _document_fields(finding: DoctorFinding) -> dict[str, object]:
    """A finding as the `--out FILE.json` document has it: no `record` field."""
    return {k: v for k, v in asdict(finding).items() if k != "record"}


def findings_json(findings: list[DoctorFinding]) -> str:
    return json.dumps(
        {"schema": DOCTOR_DOCUMENT, "version": 1, "findings": [_document_fields(f) for f in findings]}, indent=2
    )
