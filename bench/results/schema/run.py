"""The run's frame in the results file: its `run` header and `end` record, and the format's name and version."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bench.results.provenance import Provenance
from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.quality import Relevance

SCHEMA = "ragbench.results"
# The single JSON documents identity and doctor write for `--out FILE.json`.
IDENTITY_DOCUMENT, DOCTOR_DOCUMENT = "ragbench.identity", "ragbench.doctor"
VERSION = 3
# Versions this ragbench still reads (older files load; new fields take their defaults).
READABLE_VERSIONS = (1, 2, 3)


@dataclass
class RunHeader:
    command: str  # quality | demo | identity | doctor | load | ...
    created: str  # ISO 8601, UTC
    ragbench_version: str
    # quality and demo only (other commands leave them empty):
    dataset: dict[str, Any] = field(default_factory=dict)  # name, source, format, split, fingerprint, counts, notes
    measures: list[str] = field(default_factory=list)  # trec names
    measure_labels: dict[str, str] = field(default_factory=dict)  # trec name -> label (nDCG@10)
    depth: int = 0
    seed: int = 0
    targets: list[str] = field(default_factory=list)  # names, in the order they run
    measure_relevance: dict[str, Relevance] = field(default_factory=dict)  # trec name -> qrels | answers | generated
    load: dict[str, Any] | None = None  # `ragbench load`: endpoints and sweep settings
    record: str = "run"
    schema: str = SCHEMA
    version: int = VERSION
    #: `quality --hourly-usd`: the serving hardware's price per hour, for the report's $ costs; left out: none given
    hourly_usd: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: `--label NAME=VALUE` and a suite's [suite] labels, then the commit, branch and ci_run labels CI variables fill
    #: where the user gave none (provenance.ci_labels names those); left out: none
    labels: dict[str, str] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: the runner, the suite file's hash and the CI variables read (bench/results/provenance.py); left out: a file
    #: written before version 3
    provenance: Provenance | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: `ragbench grow`: the ladder (rungs, unit, distractors, queries, slo), what --resume must match; left out:
    #: another command
    grow: dict[str, Any] | None = field(default=None, metadata=WRITTEN_WHEN_SET)


class EndStatus(StrEnum):
    """How a run ended: every record written, stopped by Ctrl-C or SIGTERM, or stopped by an error."""

    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass
class EndRecord:
    status: EndStatus  # complete | interrupted | failed
    finished: str
    error: str | None = None
    record: str = "end"
