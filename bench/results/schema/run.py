"""The run's frame in the results file: its `run` header and `end` record, and the format's name and version."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypedDict

from bench.core.dataset_blocks import DatasetBlock as DatasetBlock  # the header's `dataset`, shared with bench.datasets
from bench.core.dataset_blocks import DistractorSourceBlock
from bench.results.provenance import Provenance
from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.quality import Relevance

SCHEMA = "ragbench.results"
# The single JSON documents identity and doctor write for `--out FILE.json`.
IDENTITY_DOCUMENT, DOCTOR_DOCUMENT = "ragbench.identity", "ragbench.doctor"
VERSION = 3
# Versions this ragbench still reads (older files load; new fields take their defaults).
READABLE_VERSIONS = (1, 2, 3)


class RunCommand(StrEnum):
    """The command that wrote a results file; a file may name one this ragbench does not know (a newer one's), read
    as its plain string."""

    QUALITY = "quality"
    DEMO = "demo"
    IDENTITY = "identity"
    DOCTOR = "doctor"
    LOAD = "load"
    SIZE = "size"
    CEILING = "ceiling"
    INGEST = "ingest"
    GROW = "grow"


# The commands whose runs are quality runs (`demo` is `quality` on the built-in dataset).
QUALITY_COMMANDS = (RunCommand.QUALITY, RunCommand.DEMO)


class GrowLadder(TypedDict, total=False):
    """The header's `grow` (its wire shape, read back from files of every version: any key may be absent): the
    ladder a grow run climbs, what --resume must match."""

    rungs: list[int]
    unit: str
    distractors: str
    queries: int | None
    seed: int
    slo: str | None
    distractor_source: DistractorSourceBlock  # bench/datasets/distractors.py: its source, kind and how it is made
    engines: dict[str, str]  # target name -> its kind and mode (openwebui:hybrid): a --resume keeps each name's


@dataclass
class RunHeader:
    command: RunCommand | str  # quality | demo | identity | doctor | load | ...
    created: str  # ISO 8601, UTC
    ragbench_version: str
    # quality and demo only (other commands leave them empty):
    #: name, source, format, split, fingerprint, counts, notes
    dataset: DatasetBlock = field(default_factory=DatasetBlock)
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
    grow: GrowLadder | None = field(default=None, metadata=WRITTEN_WHEN_SET)

    @property
    def dataset_info(self) -> DatasetInfo:
        """`dataset`, typed for its readers."""
        return DatasetInfo.of(self.dataset)


def _text(data: Mapping[str, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _count(data: Mapping[str, object], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class DatasetInfo:
    """What a run's header says of the data it ran on (`RunHeader.dataset`, a JSON object whose keys depend on the
    command: a dataset's for quality, grow and ingest, a workload's for load, size and ceiling); a key the header
    lacks, or holds with another type, reads as None."""

    name: str | None = None
    source: str | None = None
    format: str | None = None
    split: str | None = None
    fingerprint: str | None = None
    documents: int | None = None
    queries: int | None = None
    notes: tuple[str, ...] = ()
    tokens_source: str | None = None  # a workload's: what counted its tokens
    distinct_texts: int | None = None  # ingest: the distinct texts, where some documents repeat another's
    identical_copies: int | None = None  # ingest: the documents that repeat another's text

    @classmethod
    def of(cls, data: Mapping[str, object]) -> DatasetInfo:
        notes = data.get("notes")
        return cls(
            name=_text(data, "name"),
            source=_text(data, "source"),
            format=_text(data, "format"),
            split=_text(data, "split"),
            fingerprint=_text(data, "fingerprint"),
            documents=_count(data, "documents"),
            queries=_count(data, "queries"),
            notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
            tokens_source=_text(data, "tokens_source"),
            distinct_texts=_count(data, "distinct_texts"),
            identical_copies=_count(data, "identical_copies"),
        )


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


# --- a target's vector store, part of its identity (issue 47) ---------------------------------------------------

#: the spec parameter that states an app's vector store (`openwebui:vector@URL?store=pgvector-halfvec-hnsw`)
STORE_PARAM = "store"
_DANGLING = re.compile(r"[?&](?=[\s\]]|$)")  # a `?` or `&` left with no parameter after it
_STORE_IN_SPEC = re.compile(r"([?&])store=([^&#\s\]]*)")  # a value ends at &, #, a space or ] (history's words)


def spec_store(spec: str) -> str | None:
    """The store a spec text states (`...?store=NAME`), else None."""
    found = _STORE_IN_SPEC.search(spec)
    return found.group(2) or None if found else None


def without_store(spec: str) -> str:
    """A spec text or target name with its `store=` parameter removed: what two runs of one target on different
    stores have in common."""
    text = _STORE_IN_SPEC.sub(lambda m: m.group(1), spec).replace("?&", "?").replace("&&", "&")
    return _DANGLING.sub("", text)


def record_store(record: object) -> str | None:
    """The store a results record names: a grow rung's `store`, a target record's `config.store.name` (the app's own
    report or the spec's statement, `Target.describe()`), else `store=` in its spec or target text (an ingest
    point's target is its spec, a grow rung's target its name); None where the record names none."""
    stated = getattr(record, "store", None)  # a grow rung's own field: its target may be a name without `store=`
    if isinstance(stated, str) and stated:
        return stated
    config = getattr(record, "config", None)
    if isinstance(config, Mapping):
        store = config.get("store")
        if isinstance(store, Mapping) and isinstance(store.get("name"), str) and store["name"]:
            return str(store["name"])
    for attribute in ("spec", "target", "name"):
        text = getattr(record, attribute, None)
        if isinstance(text, str) and spec_store(text):
            return spec_store(text)
    return None
