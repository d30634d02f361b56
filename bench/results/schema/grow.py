"""The results file's grow records: one `grow_rung` per rung and target, one `grow` summary per target."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from bench.core.growth_laws import LawName
from bench.core.machine import MachineView
from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.ingest import EndpointCalls
from bench.results.schema.kinds import ErrorCount, TargetKind


class RungStatus(StrEnum):
    """How a target's rung ended."""

    OK = "ok"  # ingested and every query answered
    ERRORS = "errors"  # ingested, but some queries failed (`errors`)
    FAILED = "failed"  # the increment's ingest failed (`error`): no query was sent, later rungs are not tried


class GrowUnit(StrEnum):
    """What a ladder's rungs count."""

    DOCS = "docs"
    CHUNKS = "chunks"  # the app's own count of chunks in the knowledge base


class IngestMode(StrEnum):
    """How a target took a rung's documents."""

    INCREMENTAL = "incremental"  # only the documents its knowledge base lacked were sent (a server's app)
    REBUILD = "rebuild"  # the engine indexed every document of the rung again (a local engine)


@dataclass
class GrowRungRecord:
    """`ragbench grow`: one target at one rung of the ladder (the knowledge base grown to `size`)."""

    target: str  # the target's name
    kind: TargetKind  # bm25 | dense | hybrid | openwebui | lightrag
    rung: int  # 1, 2, ...: the rung's place in the ladder
    size: int  # the knowledge base at this rung in `unit`: documents, or the app's chunks (at least the rung's size)
    unit: GrowUnit  # what `size` counts: docs | chunks (the app's own count, `chunks`)
    added: int  # documents this rung added to the previous rung's knowledge base
    ingest_mode: IngestMode  # incremental (only the new documents sent) | rebuild (the engine indexed all `size` again)
    status: RungStatus
    ingest_seconds: float  # the increment's ingest (rebuild: the whole index), wall time of the target's prepare
    docs_per_s: float | None  # documents ingested (incremental: sent; rebuild: size) over ingest_seconds; None: none
    queries: int  # queries sent, one at a time
    latency_ms: dict[str, float]  # per query wall time of the target's search, ms: p50, p99 (and the SLO's pNN)
    metrics: dict[str, float]  # measure label (nDCG@10, R@100) -> mean over the queries, failed ones as zero
    errors: dict[str, int]  # failed queries by kind (http-400, timeout, error)
    error_examples: dict[str, str]  # kind -> the first such query's message, the server's own words
    error: str | None = None  # why the increment's ingest failed (status failed)
    record: str = "grow_rung"
    #: the vector store the target states (`store=NAME` on an Open WebUI spec), kept here because a named target's
    #: records carry only its name: what keeps compare and history from pairing two stores; left out: none stated
    store: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the first rung after --resume: the target's knowledge base was brought to this size in one step (local
    #: engines rebuild; a server keeps what it held and takes what is missing); left out: grown as planned
    resumed: bool = field(default=False, metadata=WRITTEN_WHEN_SET)
    #: resident memory of the app's process and its children after the rung's queries (`pid=`, or the process
    #: listening on the target's loopback port); left out: not on this host, or a local engine
    app_rss_bytes: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: bytes allocated to the files under the target's `data_dir=` after the rung; left out: none given
    store_bytes: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the part of ingest_seconds that is the app's ingest alone: the target's uploads and the wait for the app to
    #: process them (Open WebUI's upload loop, LightRAG's insert and wait); the rest is what ragbench does around
    #: it (configuration reads, listing and re-checking the base, the mode's settings); left out: a local engine
    app_ingest_seconds: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: documents in the knowledge base at this rung, with --unit chunks (`size` then counts chunks)
    docs: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the app's chunks in the knowledge base at this rung (Open WebUI: the texts its embedding calls carried through
    #: the meter, summed over the rungs; LightRAG: its documents' chunks_count; a local engine: one per document);
    #: left out: not counted (Open WebUI without --meter-upstream)
    chunks: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the app's provider calls during the increment's ingest, by meter route (`--meter-upstream`, the meter of
    #: `ingest`): calls, texts, tokens, status classes; left out: no meter
    ingest_calls: dict[str, EndpointCalls] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: the same during the rung's queries (the untimed warm-up query left out)
    query_calls: dict[str, EndpointCalls] = field(default_factory=dict, metadata=WRITTEN_WHEN_SET)
    #: the host during the rung's timed queries (load average at both ends, CPUs busy and stolen); left out: written
    #: before it was recorded, or no query was timed
    machine: MachineView | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: how late ragbench's own 10 ms timer woke during the timed queries, p99 (bench.core.machine.LagProbe): past
    #: a tenth of the rung's p50 the rung's latencies are the machine's as much as the app's (left out of the laws)
    lag_p99_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)

    @property
    def error_counts(self) -> list[ErrorCount]:
        """`errors` and `error_examples` as one typed record per kind."""
        return ErrorCount.of(self.errors, self.error_examples)


@dataclass
class GrowthLaw:
    """A latency percentile's fitted law over the measured rungs: latency_ms = a + b·f(size)."""

    quantity: str  # p50 | p99 | pNN
    law: LawName  # constant | log | linear | n log n | quadratic
    a: float
    b: float
    held_out_error: float  # mean relative error predicting each rung from the rungs below it (rolling origin)
    fit_error: float  # relative RMS error of the fit on every rung
    rungs: int  # rungs fitted
    #: the size at which the law reaches the SLO's latency; left out: no SLO, a law that does not grow, or the
    #: SLO's percentile is another
    slo_size: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the laws the rungs do not rule out (held-out error within twice the best's, latency not falling with size),
    #: the chosen one among them: an extrapolation is only as sure as they agree
    credible_laws: list[LawName] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: the smallest and largest size at which a credible law reaches the SLO; high left out while low is set: a
    #: credible law never reaches it
    slo_size_low: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    slo_size_high: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class GrowSummaryRecord:
    """`ragbench grow`: the answer for one target, from its `grow_rung` records."""

    target: str
    slo: str | None  # the SLO as given (p99 ≤ 2,000 ms), None: none given
    largest_ok: int | None  # the largest size measured within the SLO and without errors; None: none
    first_break: int | None  # the first size that failed, had failed queries, or broke the SLO; None: none did
    first_break_reason: str | None  # why, with the server's message or the figure
    laws: list[GrowthLaw]  # p50 and the SLO's percentile; empty: fewer than 3 rungs measured
    quality_per_decade: dict[str, float]  # measure label -> change of its mean per tenfold size (least squares)
    answer: str  # the line a report opens with
    record: str = "grow"
    #: rungs whose timed queries the machine stalled (their `lag_p99_ms` past a tenth of their p50): neither held
    #: nor broken, left out of the laws, said in the answer; left out: none
    busy_rungs: list[int] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
