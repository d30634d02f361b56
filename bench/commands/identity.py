"""The plain function behind `ragbench identity` and a suite's [[identity]] entries: check every option (one
line, exit 2), read the texts, prepare --out like every other command, compare, write."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.core.progress import progress_bars
from bench.core.secrets import mask, mask_data
from bench.datasets.io import require_file
from bench.endpoints.spec import EndpointSpec, parse_spec
from bench.identity.console import render
from bench.identity.inputs import Tokenizer, from_dataset, from_texts
from bench.identity.results import identity_results
from bench.identity.run import IdentityRequest, IdentityResult, check_endpoints, run_identity
from bench.report import write_outputs
from bench.results.outdir import RESULTS_FILE, is_document, prepare_out


@dataclass
class IdentityCommand:
    endpoints: list[str]  # NAME=SPEC
    texts: Path | None = None
    dataset: Path | None = None
    reference: str | None = None
    dtype: str | None = None
    tokenizer: Path | None = None
    limit: int | None = None
    out: Path | None = None  # a folder (results.jsonl and its report), or FILE.json (schema ragbench.identity v1)
    overwrite: bool = False  # replace an earlier run in `out` (only ragbench's files there)


def check_identity(command: IdentityCommand) -> list[EndpointSpec]:
    """Every option and path checked, nothing read whole, opened or written: the CLI and a suite's
    validation use this one function."""
    if (command.texts is None) == (command.dataset is None):
        raise UserError("identity: give exactly one of --texts FILE or --dataset PATH")
    specs = [parse_spec(s) for s in command.endpoints]
    check_endpoints([(s.name, s.is_rerank) for s in specs], command.reference, command.dtype)
    if command.texts is not None:
        require_file(command.texts, "texts file")
    if command.tokenizer is not None:
        Tokenizer(command.tokenizer)
    return specs


def identity_command(command: IdentityCommand, say: Callable[[str], None] = print) -> IdentityResult:
    specs = check_identity(command)
    inputs = (
        from_texts(command.texts, command.limit)
        if command.texts is not None
        else from_dataset(command.dataset, command.limit)
    )
    if command.out is not None:  # after every check, before minutes of work: a refusal costs nothing
        prepare_out(command.out, [s.name for s in specs], command.overwrite)
    request = IdentityRequest(
        specs, inputs, reference=command.reference, dtype=command.dtype, tokenizer=command.tokenizer
    )
    if sys.stderr.isatty():
        with progress_bars() as bars:
            report = run_identity(request, advance=bars("identity: texts through every endpoint", len(inputs.texts)))
    else:  # a bar's last frame on a log or pipe would only bury the one-line error that may follow
        report = run_identity(request)
    results = identity_results(report, (command.out or Path(".")) / RESULTS_FILE)
    say(mask(render(results)))
    if command.out is not None and is_document(command.out):  # the format before results.jsonl, kept for existing users
        command.out.write_text(json.dumps(mask_data(report.to_dict()), indent=2))
        say(f"report: {command.out}")
    elif command.out is not None:
        say(f"report: {write_outputs(results)}")
    return report
