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

# A measured point's own error-rate limit (load, size and quality's --background max_error_rate=). `compare`'s
# bound on its rise between runs is another meaning with its own name, --max-error-rate-increase.
MAX_ERROR_RATE_FLAG = Flag(
    ("--max-error-rate",),
    "A point's largest error rate, (errors + unsent) / requests: a point above it is marked errors; load then exits 1 "
    "(a point with no success: 3), size counts it outside the SLO.",
)
# Options size and grow share: the latency SLO.
SLO = Flag(
    ("--slo",),
    "Latency SLO on any percentile, pNN=DURATION, e.g. p95=800ms or p99=2s (grow: of a query).",
    suite=False,
)
# Options load --trace and size --trace share.
ROUTE = Flag(
    ("--route",), "--trace: ROUTE=NAME, the trace's route replayed against endpoint NAME (-e NAME=...).", suite=False
)
# Options of the commands that read a query set's qrels (quality: from a suite's [datasets] entry instead).
SPLIT = Flag(("--split",), "qrels split (BEIR/TREC).", suite=False)


def target_flag(kinds: str) -> Flag:
    """`--target` of a command that measures targets, with the kinds it takes (grow, ingest)."""
    return Flag(("--target", "-t"), f"[NAME=]{kinds}; repeat (docs/targets.md).")


# Options grow and ingest share: the meter in front of the app's provider, and what is left on the servers.
METER_UPSTREAM = Flag(
    ("--meter-upstream",),
    "[ROUTE=]URL: run a meter forwarding /ROUTE to URL (ROUTE embedding by default): the app's provider calls, texts "
    "and tokens (grow: per rung); point the app's provider URL at the printed meter URL. Repeat per provider.",
)
METER_HOST = Flag(("--meter-host",), "The meter's address.")
METER_PORT = Flag(("--meter-port",), "The meter's port.")
KEEP = Flag(
    ("--keep",),
    "Keep what ragbench put on the servers: Open WebUI's knowledge bases and files (ingest: each combination's), "
    "LightRAG's documents (grow).",
)
