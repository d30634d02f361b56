"""A run's status as the load, size and ceiling reports head it: complete, or how it ended and why."""

from __future__ import annotations

from dataclasses import dataclass

from bench.results.schema import EndRecord, EndStatus


@dataclass(frozen=True)
class RunStatus:
    text: str
    complete: bool


def run_status(end: EndRecord | None) -> RunStatus:
    """The status line's text, and whether the run completed (the HTML marks any other end)."""
    if end is None:
        return RunStatus("interrupted (no end record): the points below finished", False)
    if end.status == EndStatus.COMPLETE:
        return RunStatus("complete", True)
    return RunStatus(f"{end.status}: {end.error}", False)
