"""Errors a user can cause. The CLI turns each into one line on stderr and its exit code (2; 3 for
`MeasurementFailed`)."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input, an unreachable server, a refused request: anything the user can fix."""

    exit_code = 2


class InputError(UserError):
    """A problem in an input file, located by path and (where known) line number."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ServerError(UserError):
    """A server that cannot be reached, refuses the key, or answers something unusable."""

    def __init__(self, server: str, message: str, created: list[str] | None = None):
        self.server = server
        # What ragbench had created on the server before the failure, so the user can clean up.
        self.created = list(created or [])
        text = f"{server}: {message}"
        if self.created:
            text += f" (created so far: {', '.join(self.created)})"
        super().__init__(text)


# Exit codes every command shares: 0 all measured (and every check passed), 1 a check or gate failed,
# 2 a user error (nothing or part run), 3 the command ran but a measurement failed or measured nothing
# (a load point with no successful answer, a failed quality target, failed generations), whatever else passed.
EXIT_CHECK_FAILED = 1
EXIT_USER_ERROR = 2
EXIT_MEASUREMENT_FAILED = 3


class MeasurementFailed(UserError):
    """The command ran and wrote everything it measured (results, report), but a measurement failed: a
    failed target, failed queries or generated answers. Raised last, so the CLI's one line and exit code
    3 come after every output is written. `report`: where the written report is, for a caller that shows it."""

    exit_code = EXIT_MEASUREMENT_FAILED

    def __init__(self, message: str, report: Path | None = None):
        super().__init__(message)
        self.report = report
