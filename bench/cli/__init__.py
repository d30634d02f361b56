"""`ragbench` console entry point. Commands are thin: parse, call one function, print.

Each module below registers its commands on `app` when imported.
"""

from __future__ import annotations

import sys
import traceback

from typer._click import exceptions as click_errors  # typer vendors Click; its errors live here

from bench.cli import (  # noqa: F401  (registration)
    ceiling_cmd,
    compare_cmd,
    datasets_cmd,
    doctor_cmd,
    evaluate_cmd,
    identity_cmd,
    load_cmd,
    meter_cmd,
    quality_cmd,
    report_cmd,
    run_cmd,
    size_cmd,
)
from bench.cli.app import app
from bench.core import interrupt
from bench.core.errors import UserError
from bench.core.secrets import MaskedStream


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
            code = app(standalone_mode=False, prog_name="ragbench")
            code = code if isinstance(code, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except click_errors.NoArgsIsHelpError as exc:  # `ragbench` or a group alone: its help
            print(exc.ctx.get_help())
            code = 2
        except click_errors.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx else "ragbench"
            message = " ".join(exc.format_message().split()).rstrip(".")
            print(f"ragbench: error: {message} (see '{command} --help')", file=sys.stderr)
            code = exc.exit_code
        except UserError as exc:
            print(f"ragbench: error: {exc}", file=sys.stderr)
            code = exc.exit_code
        except KeyboardInterrupt:  # raised outside Typer's reach (Typer itself turns it into exit 130)
            code = 130
        except Exception:  # a bug: the traceback, masked like everything else
            print(traceback.format_exc(), end="", file=sys.stderr)
            code = 1
    except KeyboardInterrupt:  # a second signal while the first was being reported
        code = 130
    status = interrupt.exit_status()
    if status is not None:
        print(f"ragbench: interrupted ({interrupt.signal_name()})", file=sys.stderr)
        return status
    return code
