"""The plain function behind `ragbench identity` and a suite's [[identity]] entries: check every option (one
line, exit 2), read the texts, prepare --out like every other command, compare, write."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bench.commands.options import ENDPOINTS, OVERWRITE, TEXTS, Flag, option, out_flag
from bench.commands.specs import endpoint_specs
from bench.core import values as v
from bench.core.errors import MeasurementFailed, UserError
from bench.core.http.deadline import overall_deadline
from bench.core.progress import ProgressFactory, progress_bars
from bench.core.secrets import mask, mask_data
from bench.datasets.io import require_file
from bench.datasets.texts import Tokenizer
from bench.endpoints.spec import EndpointSpec
from bench.identity.console import render
from bench.identity.inputs import from_dataset, from_texts
from bench.identity.outcome import IdentityResult
from bench.identity.results import identity_records, identity_results
from bench.identity.run import IdentityRequest, check_endpoints, run_identity
from bench.report import write_report
from bench.results.frame import plain_header
from bench.results.lifecycle import Output, open_run
from bench.results.outdir import RESULTS_FILE, is_document, prepare_out_document
from bench.results.provenance import Origin
from bench.results.schema import RunCommand
from bench.results.store import Results

# A comparison of a few thousand texts through a few endpoints takes minutes; one that has run half an hour is held by
# a server that trickles its answers (each request within its own timeout), not by the work.
DEFAULT_MAX_TIME = "30m"


@dataclass
class IdentityCommand:
    """`ragbench identity`'s options and a suite's [[identity]] entry: each declared once, here."""

    endpoints: list[str] = field(metadata=option(ENDPOINTS))  # NAME=SPEC
    texts: Path | None = field(default=None, metadata=option(TEXTS))
    dataset: Path | None = field(
        default=None, metadata=option(Flag(("--dataset",), "A dataset folder (BEIR: corpus.jsonl + queries.jsonl)."))
    )
    reference: str | None = field(
        default=None, metadata=option(Flag(("--reference",), "Compare every endpoint with this one only."))
    )
    dtype: str | None = field(
        default=None,
        metadata=option(
            Flag(
                ("--dtype",),
                "Thresholds for float32|float16|bfloat16|int8 (default: reported by the endpoints, else float32).",
            )
        ),
    )
    tokenizer: Path | None = field(
        default=None,
        metadata=option(Flag(("--tokenizer",), "Model folder with tokenizer.json for token-length buckets.")),
    )
    limit: int | None = field(default=None, metadata=option(Flag(("--limit",), "Use only the first N texts.", min=1)))
    # a folder (results.jsonl and its report), or FILE.json (schema ragbench.identity v1)
    out: Path | None = field(
        default=None,
        metadata=option(out_flag("the older single JSON document (schema ragbench.identity v1)")),
    )
    max_time: str = field(
        default=DEFAULT_MAX_TIME,
        metadata=option(
            Flag(
                ("--max-time",),
                "Bound on the whole comparison, e.g. 10m: every request ends by then (an endpoint's ?timeout= "
                "bounds each request only); past it: exit 3.",
            )
        ),
    )
    overwrite: bool = field(default=False, metadata=option(OVERWRITE))
    origin: Origin = field(default_factory=Origin)  # --label NAME=VALUE and the suite file: the header's provenance


@dataclass(frozen=True)
class IdentityPlan:
    """An identity request checked: its endpoint specs and its budget, each parsed once."""

    specs: list[EndpointSpec]
    max_time_s: float


def check_identity(command: IdentityCommand, known: Mapping[str, EndpointSpec] | None = None) -> IdentityPlan:
    """Every option and path checked, nothing read whole, opened or written: the CLI and a suite's
    validation use this one function (`known`: the suite's endpoint specs, parsed when it was read)."""
    if (command.texts is None) == (command.dataset is None):
        raise UserError("identity: give exactly one of --texts FILE or --dataset PATH")
    specs = endpoint_specs(command.endpoints, known)
    check_endpoints([(s.name, s.is_rerank) for s in specs], command.reference, command.dtype)
    if command.texts is not None:
        require_file(command.texts, "texts file")
    if command.tokenizer is not None:
        Tokenizer(command.tokenizer)
    return IdentityPlan(specs, v.duration("--max-time", command.max_time, v.MAX_TIME_SECONDS))


def identity_command(
    command: IdentityCommand, say: Callable[[str], None] = print, plan: IdentityPlan | None = None
) -> IdentityResult:
    """`plan`: the request as a suite checked it when it was read; else checked here."""
    plan = plan or check_identity(command)
    if command.texts is not None:
        inputs = from_texts(command.texts, command.limit)
    else:
        assert command.dataset is not None  # check_identity: exactly one of the two
        inputs = from_dataset(command.dataset, command.limit)
    request = IdentityRequest(
        plan.specs,
        inputs,
        reference=command.reference,
        dtype=command.dtype,
        tokenizer=command.tokenizer,
        max_time_s=plan.max_time_s,
    )
    if command.out is None or is_document(command.out):
        return _without_folder(command, request, say)
    # A bar's last frame on a log or pipe would only bury the one-line error that may follow: bars on a terminal only.
    output = Output(
        command.out,
        command.overwrite,
        report=write_report,
        show=lambda results: _show(results, say),
        say=say,
        progress=sys.stderr.isatty(),
        origin=command.origin,
    )
    with open_run(output, plain_header(RunCommand.IDENTITY)) as run:  # after every check, before minutes of work
        report = _compare(request, run.progress)
        run.write(*identity_records(report))
    return report


def _without_folder(command: IdentityCommand, request: IdentityRequest, say: Callable[[str], None]) -> IdentityResult:
    """On the console only, or also as FILE.json (one JSON document, schema ragbench.identity v1)."""
    if command.out is not None:  # refused like a folder, before minutes of work
        prepare_out_document(command.out, command.overwrite)
    if sys.stderr.isatty():
        with progress_bars() as bars:
            report = _compare(request, bars)
    else:
        report = _compare(request, None)
    _show(identity_results(report, Path(RESULTS_FILE)), say)
    if command.out is not None:
        command.out.write_text(json.dumps(mask_data(report.to_dict()), indent=2))
        say(f"report: {command.out}")
    return report


def _compare(request: IdentityRequest, progress: ProgressFactory | None) -> IdentityResult:
    """Every text through every endpoint, all requests within --max-time of the start (one overall deadline)."""
    advance = (
        (lambda n: None)
        if progress is None
        else progress("identity: texts through every endpoint", len(request.inputs.texts))
    )
    started = time.monotonic()
    try:
        with overall_deadline(request.max_time_s):
            return run_identity(request, advance=advance)
    except UserError as exc:
        if request.max_time_s is None or time.monotonic() - started < request.max_time_s:
            raise
        raise MeasurementFailed(
            f"identity: --max-time {request.max_time_s:g} s passed before every text had its answer ({exc})"
        ) from None


def _show(results: Results, say: Callable[[str], None]) -> None:
    if results.of("identity"):  # the summary comes with every other record: nothing finished without it
        say(mask(render(results)))
