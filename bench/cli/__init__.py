"""`ragbench` console entry point. Commands are thin: parse, call one function, print.

Each module below registers its commands on `app` when imported.
"""

from __future__ import annotations

import sys

from bench.cli.app import app
from bench.errors import UserError

from bench.cli import datasets_cmd, evaluate_cmd, quality_cmd, meter_cmd, identity_cmd, doctor_cmd  # noqa: E402,F401  (registration)
from bench.cli import compare_cmd, run_cmd  # noqa: E402,F401  (registration)
from bench.cli import load_cmd  # noqa: E402,F401  (registration)


def main() -> None:
    # Click handles its own usage errors and --help (exit 2 / 0); user errors raised by ragbench's
    # functions come through as UserError and become one line on stderr.
    try:
        app()
    except UserError as exc:
        print(f"ragbench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
