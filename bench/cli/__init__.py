"""`ragbench` console entry point. Commands are thin: parse, call one function, print.

Each module below registers its commands on `app` when imported.
"""

from __future__ import annotations

import sys
import traceback

from bench import interrupt
from bench.cli.app import app
from bench.errors import UserError
from bench.secrets import MaskedStream

from bench.cli import datasets_cmd, evaluate_cmd, quality_cmd, meter_cmd, identity_cmd, doctor_cmd  # noqa: E402,F401  (registration)
from bench.cli import compare_cmd, run_cmd  # noqa: E402,F401  (registration)
from bench.cli import load_cmd  # noqa: E402,F401  (registration)


def main() -> None:
    """Run one command. Everything it prints passes through `bench.secrets.mask`; a user error is one
    line and exit 2; Ctrl-C and SIGTERM stop it with 130 and 143 (never 0), whatever was running."""
    interrupt.install()
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = MaskedStream(sys.stdout), MaskedStream(sys.stderr)
    try:
        code = _run()
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        sys.stdout, sys.stderr = streams
    interrupt.exit_at_once_on_signal()
    sys.exit(code)


def _run() -> int:
    # Click handles its own usage errors and --help (exit 2 / 0); user errors raised by ragbench's
    # functions come through as UserError and become one line on stderr.
    try:
        try:
            app()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
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
