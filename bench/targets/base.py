"""The retrieval-target protocol: ingest a dataset once, then rank queries into corpus doc ids.

Every target (local engines, Open WebUI, LightRAG) implements `Target`. Mapping a target's own
units (chunks, passages) back to corpus doc ids — first rank wins — happens inside the target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol, TypedDict, runtime_checkable

import httpx

from bench.core.errors import UserError
from bench.core.progress import ProgressFactory
from bench.core.progress import no_progress as no_progress  # the targets' callers take it from here
from bench.core.secrets import MASK, is_secret_name, mask
from bench.datasets.model import Dataset
from bench.endpoints.spec import EndpointSpec
from bench.results.schema.kinds import TargetKind as TargetKind  # the records' vocabulary, re-exported
from bench.targets.embed_cost import SentCost

# A progress callback: (task description, total or None) -> advance(n) function.


@dataclass
class TargetOptions:
    """Options from the command line that apply to every target of a run."""

    embedding_model: str | None = None  # local dense engines; default: the bundled MiniLM
    cross_encoder: str | None = None  # the `+rerank` stage
    rerank_depth: int = 100
    # `-e NAME=SPEC`: endpoints that targets name with `?embedder=NAME` / `?reranker=NAME`
    endpoints: dict[str, EndpointSpec] = field(default_factory=dict)
    cache: bool = True  # False: --no-cache, every text embedded again (nothing read from or written to the cache)
    # What this run's targets put in the embedding cache: one per run, shared by every target built with these
    # options, so a target whose vectors another target of the run embedded is credited that one's cost.
    ledger: CacheLedger = field(default_factory=lambda: CacheLedger())
    # Every query embedded when asked, never read from the cache (`grow`: the same queries at every rung, each
    # latency its own); the corpus' vectors still come from the cache.
    fresh_queries: bool = False
    # Replaces the network of the HTTP targets and of the endpoints they name (httpx.MockTransport in tests).
    transport: httpx.BaseTransport | None = None


class CacheLedger:
    """Which target of this run embedded which texts, by the cache key of what served them (a sha256 of each
    text, as the cache keys it): a target that reads them from the cache is credited the cost of the one that
    embedded them (`shared`), and only what no target of this run embedded counts as from an earlier run.

    >>> ledger = CacheLedger()
    >>> ledger.put("key", "dense", "ingest", [b"a", b"b"])
    >>> ledger.producers("key", [b"a", b"b", b"c"])
    {('dense', 'ingest'): 2}
    """

    def __init__(self) -> None:
        self._by: dict[str, dict[bytes, tuple[str, str]]] = {}
        self.costs: dict[tuple[str, str], Callable[[], SentCost]] = {}  # (target, phase) -> what it sent cost

    def put(self, key: str, target: str, phase: str, texts: list[bytes]) -> None:
        made = self._by.setdefault(key, {})
        for text in texts:
            made.setdefault(text, (target, phase))  # the first to embed a text paid for it

    def producers(self, key: str, texts: list[bytes]) -> dict[tuple[str, str], int]:
        """How many of `texts` each (target, phase) of this run embedded."""
        made = self._by.get(key, {})
        counts: dict[tuple[str, str], int] = {}
        for text in texts:
            if (by := made.get(text)) is not None:
                counts[by] = counts.get(by, 0) + 1
        return counts


@dataclass
class Hit:
    doc_id: str
    score: float | None  # None when the engine returned no score (e.g. a silent reranker fallback)


class TargetFailed(UserError):
    """A target that ended part-way (its server went away): why, and the queries it finished.

    The queries it did not finish are absent from `finished`; scored with every judged query
    counting, they score zero, as a failed query does."""

    def __init__(self, reason: str, finished: list[QueryResult]):
        super().__init__(reason)
        self.finished = finished


@dataclass
class QueryResult:
    qid: str
    hits: list[Hit]  # in the target's rank order, one per doc id
    latency_s: float | None  # None: ranked in a batch with others, so no time of its own
    error: str | None = None
    cost: dict[str, float] = field(default_factory=dict)  # e.g. llm_calls, prompt_tokens
    warnings: list[str] = field(default_factory=list)  # named anomalies, e.g. "null-scores"
    # The texts the target returned, in its rank order, when they are its own units (Open WebUI and
    # LightRAG chunks); None for targets that rank corpus documents (their texts come from the corpus).
    # Answer measures are scored on these, so they need no mapping of chunks to documents.
    passages: list[str] | None = None
    # Parts of `latency_s` measured where they happen (embed_ms, search_ms, rerank_ms): targets that name an
    # endpoint search each query on its own, so its latency and its parts are its own.
    parts_ms: dict[str, float] = field(default_factory=dict)


def batch_results(qids: list[str], hits: list[list[Hit]]) -> list[QueryResult]:
    """Results of a batch: no query has a time of its own (equal shares would fake latency percentiles)."""
    return [QueryResult(qid, h, latency_s=None) for qid, h in zip(qids, hits)]


@dataclass
class TargetSpec:
    """`kind[:variant][+rerank][@url][?key=value&...]` as written on the command line."""

    text: str
    kind: str
    variant: str | None = None
    rerank: bool = False
    url: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    given_name: str | None = None  # `NAME=` in `NAME=SPEC`: the name reports, run files and `compare` use
    # The kind's typed settings, checked by `parse_target_spec` (Open WebUI, LightRAG); None where not parsed yet:
    # not an __init__ argument, so that a spec `replace`d with other params is checked again when built.
    settings: object = field(default=None, init=False, repr=False, compare=False)

    @property
    def public_text(self) -> str:
        """The spec as stored in results and reports, credentials masked (keys belong in the environment,
        but users paste them anyway)."""
        return mask(self.text)

    @property
    def name(self) -> str:
        """The label used in results and reports: the given name, else the spec without its URL, in the order the
        spec is written (`hybrid+rerank?embedder=emb&reranker=rr`), its parameters sorted."""
        if self.given_name:
            return self.given_name
        label = self.kind + (f":{self.variant}" if self.variant else "") + ("+rerank" if self.rerank else "")
        if self.params:
            label += "?" + "&".join(f"{k}={MASK if is_secret_name(k) else v}" for k, v in sorted(self.params.items()))
        return label


class TargetDescription(TypedDict):
    """What every target's `describe()` gives: each kind returns its own TypedDict (Bm25Description, DenseDescription,
    FusionDescription, RerankStageDescription, LightRAGDescription, OpenWebUIDescription), which this keyless base
    admits; the quality record stores it whole as `config` (bench.results.schema.quality.TargetRecord)."""


@runtime_checkable
class Target(Protocol):
    name: str

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        """Index or ingest the corpus. Called once before any search."""

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        """Rank every query; at most `depth` hits each. A failing query is a result with `error` set."""

    def describe(self) -> TargetDescription:
        """Configuration and server facts to store with the results (never secrets)."""

    def close(self) -> None:
        """Restore anything changed on a server; release resources. Safe to call twice."""


def compose(
    qids: list[str],
    parts: dict[str, list[QueryResult]],
    combine: Callable[[str, dict[str, QueryResult]], QueryResult],
) -> Iterator[QueryResult]:
    """Each query's result made of its parts' results (`parts`: part name -> its results), in `qids` order.

    The one rule of every composed target (a fusion, a rerank stage over any first stage): a query that a part
    failed, or gave no result for, is that query's error, naming the part, with no hits: scored zero and
    counted as a failed query, never the other parts' ranking passed off as the whole's. `combine` sees only
    queries whose parts all answered. A part whose server went away raises instead (`TargetFailed`): the
    whole target ends, as any target does (`one_by_one`, `run_queries`). Lazy, so that a caller keeps the
    results made before a part's server went away."""
    found = {name: {r.qid: r for r in results} for name, results in parts.items()}
    for qid in qids:
        mine = {name: results.get(qid) for name, results in found.items()}
        failed = [
            f"{name} failed: {result.error}" if result else f"{name} gave no result"
            for name, result in mine.items()
            if result is None or result.error
        ]
        if failed:  # what the parts spent on it was spent all the same
            spent = [result.cost for result in mine.values() if result]
            cost = {key: sum(c.get(key, 0.0) for c in spent) for key in {k for c in spent for k in c}}
            yield QueryResult(qid, [], None, error="; ".join(failed), cost=cost)
        else:
            yield combine(qid, {name: result for name, result in mine.items() if result})


def first_rank_wins(pairs: list[tuple[str, float | None]], depth: int) -> list[Hit]:
    """Collapse chunk-level results to documents: a document takes the rank of its best chunk."""
    seen: set[str] = set()
    hits: list[Hit] = []
    for doc_id, score in pairs:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        hits.append(Hit(doc_id, score))
        if len(hits) == depth:
            break
    return hits
