"""Command options declared once (the model: bench/core/flags.py): each request field's flag, help and bounds, from
which the CLI's options and a suite file's keys are derived (bench/cli/declared.py, bench/cli/suite/keys.py).

    @dataclass
    class IdentityCommand:
        limit: int | None = field(default=None, metadata=option(Flag(("--limit",), "Use only the first N texts.")))

The field's name is the request's, the Typer parameter's and the suite key's; its type is the option's.
"""

from __future__ import annotations

from bench.core.flags import Flag as Flag
from bench.core.flags import declared_fields as declared_fields
from bench.core.flags import flag_of as flag_of
from bench.core.flags import option as option

SPEC_HELP = (
    "NAME=KIND@URL[?option=value&...]; repeat. Kinds: tei, tei-rerank, openai (model=), cohere, "
    "reference[?model=PATH], reference-rerank?model=PATH. Keys only via key_env=VAR. See docs/endpoints.md."
)

# Options several commands share (identity, load, size): the endpoints measured and their texts.
ENDPOINTS = Flag(("--endpoint", "-e"), SPEC_HELP)
TEXTS = Flag(("--texts",), 'Texts: one per line, or .jsonl of strings / {"text"}.')
OVERWRITE = Flag(("--overwrite",), "Replace an earlier run in --out (only ragbench's files).", suite=False)


def out_flag(document: str) -> Flag:
    """`--out` of a command that writes a results folder, or `document` to a FILE.json (identity, doctor)."""
    folder = "Output folder: results.jsonl (schema ragbench.results), report.md, report.html."
    help = f"{folder} A FILE.json instead writes {document}."
    return Flag(("--out",), help, suite=False)


# Every command that writes a results file: the request's `origin` (bench/results/provenance.py) is made from it.
LABELS = Flag(
    ("--label",),
    "NAME=VALUE written into the results header (commit=…, branch=…, stack=…); repeat. In CI, commit, "
    "branch and ci_run come from GitHub Actions' or GitLab's variables unless given.",
    suite=False,
)

# Options load and size share: the client that sends the requests.
OP = Flag(("--op",), "embed or rerank (default: from the endpoint kind).")
WORKERS = Flag(("--workers",), "Client processes, one event loop each.")
TIMEOUT = Flag(("--timeout",), "Per-request timeout.")
ARRIVAL_SEED = Flag(("--seed",), "Seed for poisson/gamma arrivals.")
# A suite's jobs run where the suite runs: not a suite key.
RAY = Flag(
    ("--ray",),
    "Run the --workers as Ray actors on a cluster: auto, or the head's host:port (pip install 'ragbench[ray]'; "
    "docs/sizing.md).",
    suite=False,
)
