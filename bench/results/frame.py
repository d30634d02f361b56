"""A run's frame: the one clock that stamps its records, its header, and the `end` record's status after a stop."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench
from bench.core.errors import UserError
from bench.results.schema import EndRecord, EndStatus, RunCommand, RunHeader
from bench.results.store import Results


def now_iso(timespec: str = "seconds") -> str:
    """Now, in UTC, ISO 8601: the one clock every record and output is stamped with."""
    return datetime.now(UTC).isoformat(timespec=timespec)


def end_status(exc: BaseException) -> tuple[EndStatus, str]:
    """The `end` record's status and error for a run stopped by `exc`."""
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM (bench.core.interrupt.Interrupted)
        return EndStatus.INTERRUPTED, f"interrupted ({exc.args[0] if exc.args else 'SIGINT'})"
    if isinstance(exc, SystemExit):
        return EndStatus.INTERRUPTED, "interrupted (exit)"
    if isinstance(exc, UserError):
        return EndStatus.FAILED, str(exc)
    return EndStatus.FAILED, f"internal error: {type(exc).__name__}: {exc}"


def plain_header(command: RunCommand) -> RunHeader:
    """The header of a command whose results name no dataset, measures or targets (identity, doctor)."""
    return RunHeader(command=command, created=now_iso(), ragbench_version=bench.__version__)


def complete_results(path: Path, command: RunCommand, records: list[Any]) -> Results:
    """The results of a command that has every record at once (identity, doctor): header, records, end."""
    results = Results(path=path, header=plain_header(command))
    for record in [*records, EndRecord(status=EndStatus.COMPLETE, finished=now_iso())]:
        results.add(record)
    return results
