"""`ragbench` console entry point. Commands are thin: parse, call one function, print.

Each command's module registers it on `app` when that command runs (bench/cli/app.py: COMMANDS).
"""

from __future__ import annotations

import sys
import traceback
from typing import Protocol, cast

import typer
import typer.main

from bench.cli.app import app
from bench.core import interrupt
from bench.core.errors import EXIT_USER_ERROR, UserError
from bench.core.secrets import MaskedStream

# Typer vendors Click and exports, of Click's errors, only BadParameter: the usage error that every wrong
# command line raises is the class BadParameter derives from.
_USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
_EXIT_INTERRUPTED = 130  # the shell's status for a process ended by SIGINT
_EXIT_BUG = 1  # Python's own status for an uncaught exception or sys.exit("message")


class _UsageError(Protocol):
    """What a wrong command line's error carries (Click's UsageError)."""

    ctx: typer.Context | None
    exit_code: int

    def format_message(self) -> str: ...


def main() -> None:
    """Run one command. Everything it prints passes through `bench.core.secrets.mask`; a user error is one
    line and exit 2; Ctrl-C and SIGTERM stop it with 130 and 143 (never 0), whatever was running."""
    interrupt.install()
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout), MaskedStream(sys.stderr)
    try:
        code = _run()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = streams
    interrupt.exit_at_once_on_signal()
    sys.exit(code)


def _run() -> int:
    # Click runs without printing its own errors (standalone_mode=False) so that a usage error, like every
    # user error raised by ragbench's functions, becomes one line on stderr and exit code 2.
    try:
        try:
            code = typer.main.get_command(app)(standalone_mode=False, prog_name="ragbench")
            code = code if isinstance(code, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else _EXIT_BUG)
        except _USAGE_ERROR as exc:
            code = _usage(cast(_UsageError, exc))
        except UserError as exc:
            print(f"ragbench: error: {_one_line(str(exc))}", file=sys.stderr)
            code = exc.exit_code
        except KeyboardInterrupt:  # raised outside Typer's reach (Typer itself turns it into exit 130)
            code = _EXIT_INTERRUPTED
        except Exception:  # a bug: the traceback, masked like everything else
            print(traceback.format_exc(), end="", file=sys.stderr)
            code = _EXIT_BUG
    except KeyboardInterrupt:  # a second signal while the first was being reported
        code = _EXIT_INTERRUPTED
    status = interrupt.exit_status()
    if status is not None:
        print(f"ragbench: interrupted ({interrupt.signal_name()})", file=sys.stderr)
        return status
    return code


def _usage(error: _UsageError) -> int:
    """A wrong command line: one line naming the command's help; `ragbench` or a group alone: its help."""
    if type(error).__name__ == "NoArgsIsHelpError" and error.ctx is not None:
        print(error.ctx.get_help())
        return EXIT_USER_ERROR
    command = error.ctx.command_path if error.ctx else "ragbench"
    message = " ".join(error.format_message().split()).rstrip(".")
    if "unexpected extra argument" in message:  # `--calibration A B`: an option takes one value, repeated for more
        message += "; an option takes one value: repeat it for more (--calibration A --calibration B)"
    print(f"ragbench: error: {message} (see '{command} --help')", file=sys.stderr)
    return error.exit_code


def _one_line(message: str) -> str:
    """A user error is one line whatever it quotes: a path or value holding a line break or another control
    character is shown escaped (`\\n`), never broken across lines."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
