"""The results file's doctor record: one probe's finding."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DoctorFinding:
    """One probe's finding: the doctor's own result and its record (tests/results/v2/doctor.jsonl)."""

    hop: str  # tei | litellm | openwebui | lightrag
    ok: bool
    message: str
    fix: str = ""
    record: str = "doctor_finding"
