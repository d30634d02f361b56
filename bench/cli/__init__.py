"""`ragbench` console entry point. Commands are thin: parse, call one function, print.

Each module below registers its commands on `app` when imported.
"""

from __future__ import annotations

import sys

from bench.cli.app import app
from bench.errors import UserError

from bench.cli import datasets_cmd, evaluate_cmd, quality_cmd, meter_cmd, identity_cmd  # noqa: E402,F401  (registration)


def main() -> None:
    try:
        app(standalone_mode=False)
    except UserError as exc:
        print(f"ragbench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("ragbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # click's own usage errors come through here in non-standalone mode
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            print("ragbench: aborted", file=sys.stderr)
            sys.exit(130)
        raise
