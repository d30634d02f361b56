"""Retrieval components served by an endpoint: the corpus and the queries embedded through any embedding
endpoint (TEI, OpenAI-compatible, the in-process reference), and a rerank stage through any rerank endpoint.

One dense engine and one rerank stage, whatever serves the model: `dense` is `dense?embedder=` the
reference endpoint. What each costs is measured: `ingest` and `query_embed` blocks (texts, tokens, wall,
rates, request latency, retries and splits by cause, texts from the cache) and, for targets that name an
endpoint, each query's own latency with its embed, search and rerank parts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from bench.core.errors import ServerError, UserError
from bench.core.http import ServerUnreachable
from bench.core.percentiles import percentiles
from bench.core.progress import console
from bench.datasets.model import Dataset
from bench.endpoints.base import CallTiming, Embedder, Embeddings, Reranker
from bench.endpoints.cache import EmbeddingCache
from bench.endpoints.reference import ReferenceEmbedder, ReferenceReranker
from bench.endpoints.spec import EndpointSpec, concurrency, open_endpoint
from bench.targets.base import (
    CacheLedger,
    Hit,
    ProgressFactory,
    QueryResult,
    Target,
    TargetFailed,
    TargetOptions,
    TargetSpec,
    compose,
    no_progress,
)


class ServedEmbedder(Embedder, Protocol):
    """An embedding endpoint as ingestion drives it: its request size, the events its requests met, and
    what its vectors depend on (the cache key)."""

    events: Counter[str]

    def request_batch(self) -> int: ...

    def default_concurrency(self) -> int: ...

    def cache_key(self) -> str: ...


@runtime_checkable
class LengthChecked(Protocol):
    """An endpoint that can tell how many texts exceed its model's input limit (TEI: /tokenize vs /info)."""

    def over_limit(self, texts: list[str]) -> tuple[int | None, str]: ...


@runtime_checkable
class Metered(Protocol):
    """A target that measures what its components cost (`ingest`, `query_embed` blocks)."""

    def cost_blocks(self) -> dict[str, dict[str, Any]]: ...


@dataclass
class EmbedMeter:
    """What embedding a set of texts cost: one per phase (`ingest`, `query_embed`)."""

    texts: int = 0
    from_cache: int = 0
    tokens: int | None = None  # as the endpoint reports them (TEI's x-compute-tokens, OpenAI's usage), or counted
    tokens_by: str = "not reported: the endpoint tells no token counts (openai: give tokenizer=PATH to count them)"
    wall_s: float = 0.0
    request_ms: list[float] = field(default_factory=list)
    events: Counter[str] = field(default_factory=Counter)
    # Texts sent that are longer than the model's input limit (truncated or refused, as the endpoint's `truncate`
    # says); None where not counted, `over_limit_by` says how it was counted or why not.
    over_limit: int | None = None
    over_limit_by: str = "not counted: only TEI endpoints tell their input limit and tokenizer (/info, /tokenize)"
    over_limit_gap: bool = False  # a batch could not be counted: over_limit stays None
    # Texts read from the cache that a target of this run embedded: (target, phase) -> texts (CacheLedger)
    made_in_run: Counter[tuple[str, str]] = field(default_factory=Counter)
    owner: str = ""  # the target this meter counts for

    def add(self, calls: list[CallTiming]) -> None:
        for call in calls:
            self.request_ms.append(call.wall_ms)
            for header, source in TOKEN_SOURCES.items():
                if header in call.server:
                    self.tokens = (self.tokens or 0) + int(call.server[header])
                    self.tokens_by = source

    def measured(self) -> dict[str, Any]:
        """What the texts this meter sent cost: the figures a target sharing them is credited."""
        sent = self.texts - self.from_cache
        return {
            "texts_sent": sent,
            "requests": len(self.request_ms),
            "tokens": self.tokens,
            "tokens_by": self.tokens_by,
            "wall_s": self.wall_s,
            "texts_per_s": sent / self.wall_s if sent and self.wall_s > 0 else None,
            "tokens_per_s": self.tokens / self.wall_s if self.tokens is not None and self.wall_s > 0 else None,
        }

    def block(self, costs: dict[tuple[str, str], Callable[[], dict[str, Any]]] | None = None) -> dict[str, Any]:
        """The phase's cost block; `costs` (CacheLedger.costs) gives what each producer of its cached texts paid."""
        own = self.measured()
        # Texts another target of this run embedded are credited its cost; those this target embedded itself in
        # another phase or call are its own cost already; the rest came from an earlier run.
        shared = [
            {"with": target, "phase": phase, "texts": n, **((costs or {}).get((target, phase), dict)())}
            for (target, phase), n in sorted(self.made_in_run.items())
            if target != self.owner
        ]
        return {
            "texts": self.texts,
            "from_cache": self.from_cache,
            "from_earlier_run": self.from_cache - sum(self.made_in_run.values()),
            "shared": shared,
            **{k: own[k] for k in ("requests", "tokens", "tokens_by", "wall_s", "texts_per_s", "tokens_per_s")},
            "request_ms": percentiles(self.request_ms),
            "retries": {k.removeprefix("retry_"): v for k, v in self.events.items() if k.startswith("retry_")},
            "splits": {k.removeprefix("split_"): v for k, v in self.events.items() if k.startswith("split_")},
            "over_limit": self.over_limit,
            "over_limit_by": self.over_limit_by,
        }


# Where an endpoint's token count comes from: CallTiming.server key -> how the block says it.
TOKEN_SOURCES = {
    "x-compute-tokens": "reported by the endpoint (TEI's x-compute-tokens header)",
    "usage.prompt_tokens": "reported by the endpoint (OpenAI usage.prompt_tokens)",
}


@runtime_checkable
class TokenCounted(Protocol):
    """An endpoint that can count tokens with its model's tokenizer where its answers report none (openai's
    `tokenizer=PATH`): (tokens, how counted), or (None, why not)."""

    def count_tokens(self, texts: list[str]) -> tuple[int | None, str]: ...


# The re-check of cached vectors (`Encoder._recheck`): a sample of the cached texts embedded again, once a run.
RECHECK_LONGEST = 4  # the longest cached texts: those another truncation changes
RECHECK_SPREAD = 4  # and as many others, by their text's hash: whatever their length
RECHECK_COSINE = 0.999  # float16's batch-invariance threshold (docs/endpoints.md): the same model passes it
RECHECK_NORM = 0.01  # |norm now - norm cached| / norm cached: normalisation switched on or off fails it


def recheck_sample(texts: list[str], positions: list[int]) -> list[int]:
    """Positions of the texts to embed again: the RECHECK_LONGEST longest, then RECHECK_SPREAD others by hash
    (deterministic, one position per distinct text)."""
    by_text = {texts[i]: i for i in positions}
    longest = sorted(by_text, key=lambda t: (-len(t), EmbeddingCache.key(t)))[:RECHECK_LONGEST]
    others = sorted(set(by_text) - set(longest), key=EmbeddingCache.key)[:RECHECK_SPREAD]
    return [by_text[t] for t in longest + others]


def compare_vectors(cached: np.ndarray, fresh: np.ndarray) -> tuple[dict[str, Any], str | None]:
    """Figures of cached vs freshly embedded vectors, and why they differ beyond the tolerance (None: they don't)."""
    if cached.shape != fresh.shape:
        return {}, f"dimension {cached.shape[1]} cached, {fresh.shape[1]} served now"
    norms_cached, norms_fresh = np.linalg.norm(cached, axis=1), np.linalg.norm(fresh, axis=1)
    cosine = (cached * fresh).sum(axis=1) / np.maximum(norms_cached * norms_fresh, 1e-30)
    norm_diff = np.abs(norms_fresh - norms_cached) / np.maximum(norms_cached, 1e-30)
    figures = {"cosine_min": float(cosine.min()), "norm_diff_max": float(norm_diff.max())}
    if cosine.min() >= RECHECK_COSINE and norm_diff.max() <= RECHECK_NORM:
        return figures, None
    return figures, (
        f"cosine min {cosine.min():.4f} (at least {RECHECK_COSINE} wanted), norms differ by up to "
        f"{norm_diff.max():.2%} (at most {RECHECK_NORM:.0%} wanted)"
    )


class Encoder:
    """texts -> vectors through one embedding endpoint: the cache first (keyed by what the served model is,
    never by the spec), then the rest longest first in requests of the endpoint's size, `concurrency` in
    flight, each finished request cached at once (an interrupted ingest keeps its work). The first cached
    vectors served in a run are re-checked (`_recheck`): stale ones clear the cache of this key. `owner` names the
    target the meters count for and `ledger` is the run's (CacheLedger): cached texts another target of the run
    embedded are credited its cost; without one, every cached text counts as from an earlier run."""

    def __init__(
        self,
        endpoint: ServedEmbedder,
        concurrency: int | None = None,
        cache: bool = True,
        owner: str = "",
        ledger: CacheLedger | None = None,
    ):
        self.endpoint = endpoint
        self.owner = owner
        self.ledger = ledger or CacheLedger()
        self.concurrency = concurrency or endpoint.default_concurrency()
        # The key asks the endpoint what it serves (also with --no-cache: the record names what was served, and
        # an unreachable endpoint fails here, before anything is written).
        self.key = endpoint.cache_key()
        self.cache = EmbeddingCache(self.key) if cache else None
        self.meters: dict[str, EmbedMeter] = {}
        self.finished = (0, 0)  # texts done of those asked, in the last `embed` (what an error leaves)
        self.recheck: dict[str, Any] | None = None  # the re-check's figures and verdict, once it has run

    def describe(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint.name,
            **self.endpoint.describe(),
            "concurrency": self.concurrency,
            "served_identity": self.key,
            "cache": "on" if self.cache else "off",
            "cache_check": self.recheck,
        }

    def blocks(self) -> dict[str, dict[str, Any]]:
        return {phase: meter.block(self.ledger.costs) for phase, meter in self.meters.items()}

    def embed(
        self,
        texts: list[str],
        phase: str,
        advance: Callable[[int], None] = lambda n: None,
        cached: bool = True,
        lengths: bool = False,
    ) -> np.ndarray:
        """Vectors of `texts` in order; `phase` names the meter that counts them; with `lengths`, the texts sent
        that exceed the model's input limit are counted too (after the phase's wall time: not part of its rate)."""
        if phase not in self.meters:
            self.meters[phase] = EmbedMeter(owner=self.owner)
            self.ledger.costs[(self.owner, phase)] = self.meters[phase].measured
        meter = self.meters[phase]
        started, events = time.perf_counter(), Counter(self.endpoint.events)
        cache = self.cache if cached else None
        found = cache.get_many(texts) if cache else {}
        if cache and found and self.recheck is None:
            checked = time.perf_counter()
            found = self._recheck(cache, texts, found)
            # Its requests are not the phase's: left out of its wall time and events (the check has its own).
            started += time.perf_counter() - checked
            events = Counter(self.endpoint.events)
        meter.texts += len(texts)
        meter.from_cache += len(found)
        meter.made_in_run.update(self.ledger.producers(self.key, [EmbeddingCache.key(texts[i]) for i in found]))
        advance(len(found))
        missing = sorted((i for i in range(len(texts)) if i not in found), key=lambda i: -len(texts[i]))
        size = self.endpoint.request_batch()
        chunks = [missing[i : i + size] for i in range(0, len(missing), size)]
        try:
            self._send(texts, chunks, found, meter, advance, phase)
        finally:
            meter.wall_s += time.perf_counter() - started
            meter.events.update(self.endpoint.events - events)
            self.finished = (len(found), len(texts))
        if lengths:
            self._count_over_limit([texts[i] for i in missing], meter)
        if meter.tokens is None or meter.tokens_by.startswith("counted"):
            self._count_tokens([texts[i] for i in missing], meter)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([found[i] for i in range(len(texts))])

    def _recheck(self, cache: EmbeddingCache, texts: list[str], found: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """The cached vectors `found`, once the sample `recheck_sample` picks from them is embedded again and
        matches them within RECHECK_COSINE and RECHECK_NORM; else none: the identity key missed a change of
        what the server does (a truncation the probes did not cross, say), so every vector of this key is
        stale. The cache of the key is cleared, every text is embedded again, and why is said on stderr and
        in `describe()`'s `cache_check`."""
        started = time.perf_counter()
        sample = recheck_sample(texts, sorted(found))
        fresh = self.endpoint.embed([texts[i] for i in sample]).vectors
        figures, stale = compare_vectors(np.vstack([found[i] for i in sample]), np.asarray(fresh, dtype=np.float32))
        self.recheck = {
            "texts": len(sample),
            **figures,
            "tolerance": {"cosine_min": RECHECK_COSINE, "norm_diff_max": RECHECK_NORM},
            "wall_ms": (time.perf_counter() - started) * 1000.0,
            "verdict": "match",
        }
        if stale is None:
            return found
        cache.clear()
        self.recheck["verdict"] = (
            f"stale: {len(sample)} cached texts embedded again differ ({stale}); "
            f"the cache {self.key} was cleared and every text embedded again"
        )
        console.print(
            f"{self.endpoint.name}: cached vectors {self.recheck['verdict']}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return {}

    def _count_over_limit(self, sent: list[str], meter: EmbedMeter) -> None:
        if not isinstance(self.endpoint, LengthChecked):
            return  # the meter's default says why not
        over, by = self.endpoint.over_limit(sent)
        if over is None:  # a count with a gap is no count: it stays None, with why
            meter.over_limit_gap = True
            meter.over_limit, meter.over_limit_by = None, by
        elif not meter.over_limit_gap:
            meter.over_limit, meter.over_limit_by = (meter.over_limit or 0) + over, by

    def _count_tokens(self, sent: list[str], meter: EmbedMeter) -> None:
        """Tokens of the texts sent, counted with the model's tokenizer where the endpoint reports none (after the
        phase's wall time, as the over-limit count)."""
        if not sent or not isinstance(self.endpoint, TokenCounted):
            return
        tokens, by = self.endpoint.count_tokens(sent)
        meter.tokens_by = by
        if tokens is not None:
            meter.tokens = (meter.tokens or 0) + tokens

    def _send(
        self,
        texts: list[str],
        chunks: list[list[int]],
        found: dict[int, np.ndarray],
        meter: EmbedMeter,
        advance: Callable[[int], None],
        phase: str,
    ) -> None:
        """Every chunk through the endpoint, `concurrency` requests in flight. After an error no request is
        started; those in flight finish and are kept (cached), then the first error is raised."""

        def one(chunk: list[int]) -> tuple[list[int], Embeddings]:
            return chunk, self.endpoint.embed([texts[i] for i in chunk])

        queue = list(chunks)
        failure: ServerError | None = None
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            pending: set[Future] = set()
            while pending or (queue and failure is None):
                while queue and failure is None and len(pending) < self.concurrency:
                    pending.add(pool.submit(one, queue.pop(0)))
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        chunk, embeddings = future.result()
                    except ServerError as exc:
                        failure = failure or exc
                        continue
                    self._keep(texts, chunk, embeddings, found, meter, phase)
                    advance(len(chunk))
        if failure is not None:
            raise failure

    def _keep(
        self,
        texts: list[str],
        chunk: list[int],
        embeddings: Embeddings,
        found: dict[int, np.ndarray],
        meter: EmbedMeter,
        phase: str,
    ) -> None:
        if self.cache:
            self.cache.put_many([texts[i] for i in chunk], embeddings.vectors)
            self.ledger.put(self.key, self.owner, phase, [EmbeddingCache.key(texts[i]) for i in chunk])
        for i, vector in zip(chunk, embeddings.vectors):
            found[i] = vector
        meter.add(embeddings.calls)

    def close(self) -> None:
        self.endpoint.close()
        if self.cache:
            self.cache.close()


def one_by_one(
    name: str,
    search: Callable[[dict[str, str], int], list[QueryResult]],
    queries: dict[str, str],
    depth: int,
    progress: ProgressFactory,
) -> list[QueryResult]:
    """Each query searched on its own, as a user's query is: its latency is its own, and `search_ms` is
    what is left of it after the parts measured where they happen (`embed_ms`, `rerank_ms`). A server that went
    away, this target's or any part's (whose own search ended: TargetFailed), ends the target at its first
    query without an answer, its finished queries kept: the others would each wait out the same timeout."""
    advance = progress(f"{name}: querying", len(queries))
    results: list[QueryResult] = []
    for qid, text in queries.items():
        started = time.perf_counter()
        try:
            [result] = search({qid: text}, depth)
        except (ServerUnreachable, TargetFailed) as exc:
            raise TargetFailed(str(exc), results) from None
        except UserError as exc:  # this query refused or answered wrongly: its own error, scored zero
            result = QueryResult(qid, [], None, error=str(exc))
        result.latency_s = time.perf_counter() - started
        measured = sum(v for k, v in result.parts_ms.items() if k != "search_ms")
        result.parts_ms["search_ms"] = max(0.0, result.latency_s * 1000.0 - measured)
        results.append(result)
        advance(1)
    return results


class RerankStage:
    """Any first stage, then a rerank endpoint over each query's top `depth` documents (split into requests
    within the endpoint's limit by the endpoint client, merged exactly). A query the first stage failed, a
    rerank that fails, or one that answers fewer scores than documents sent, is that query's error (`compose`):
    it scores zero, never the first-stage order. A reranker that went away ends the target."""

    def __init__(self, first: Target, reranker: Reranker, depth: int, name: str, per_query: bool):
        self.name = name
        self.first = first
        self.reranker = reranker
        self.rerank_depth = depth
        self.per_query = per_query
        self._texts: dict[str, str] = {}

    def prepare(self, dataset: Dataset, progress: ProgressFactory) -> None:
        self._texts = {doc_id: doc.full_text for doc_id, doc in dataset.corpus.items()}
        self.first.prepare(dataset, progress)

    def search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        if self.per_query:
            return one_by_one(self.name, lambda one, d: self._search(one, d, no_progress), queries, depth, progress)
        return self._search(queries, depth, progress)

    def _search(self, queries: dict[str, str], depth: int, progress: ProgressFactory) -> list[QueryResult]:
        try:
            first = self.first.search(queries, max(depth, self.rerank_depth), progress)
        except TargetFailed as exc:  # what the first stage finished is reranked too, never kept in its order
            finished = self._rerank_all([r.qid for r in exc.finished], queries, exc.finished, depth, progress)
            raise TargetFailed(str(exc), finished) from None
        return self._rerank_all(list(queries), queries, first, depth, progress)

    def _rerank_all(
        self, qids: list[str], queries: dict[str, str], first: list[QueryResult], depth: int, progress: ProgressFactory
    ) -> list[QueryResult]:
        advance = progress(f"{self.name}: reranking", len(qids))

        def rerank(qid: str, parts: dict[str, QueryResult]) -> QueryResult:
            result = parts["first stage"]
            start = time.perf_counter()
            reranked = self._rerank(queries[qid], result, depth)
            rerank_s = time.perf_counter() - start
            reranked.parts_ms["rerank_ms"] = rerank_s * 1000.0
            # Measured per query only when the first stage was: a rerank time alone is not a query's latency.
            reranked.latency_s = None if result.latency_s is None else result.latency_s + rerank_s
            return reranked

        results: list[QueryResult] = []
        try:
            for result in compose(qids, {"first stage": first}, rerank):
                results.append(result)
                advance(1)
        except ServerUnreachable as exc:  # the reranker went away: the target ends, its finished queries kept
            raise TargetFailed(str(exc), results) from None
        return results

    def _rerank(self, query: str, result: QueryResult, depth: int) -> QueryResult:
        candidates = result.hits[: self.rerank_depth]
        kept = QueryResult(result.qid, [], None, None, result.cost, result.warnings, parts_ms=dict(result.parts_ms))
        if not candidates:
            return kept
        try:
            scores = self.reranker.rerank(query, [self._texts[h.doc_id] for h in candidates])
        except ServerUnreachable:
            raise
        except UserError as exc:  # refused, or an answer of the wrong shape
            kept.error = f"rerank failed: {exc}"
            return kept
        if len(scores.order) != len(candidates) or np.isnan(scores.scores).any():
            got = len(scores.order)
            kept.error = f"rerank failed: {self.reranker.name}: {got} scores for {len(candidates)} documents"
            return kept
        kept.hits = [Hit(candidates[i].doc_id, float(scores.scores[i])) for i in scores.order][:depth]
        return kept

    def describe(self) -> dict[str, Any]:
        return {"first_stage": self.first.describe(), "rerank_depth": self.rerank_depth, **self._reranker()}

    def _reranker(self) -> dict[str, Any]:
        described = self.reranker.describe()
        if described.get("kind") == "reference-rerank":  # as the --cross-encoder stage always described itself
            return {key: described[key] for key in ("cross_encoder", "cross_encoder_fingerprint")}
        return {"reranker": {"endpoint": self.reranker.name, **described}}

    def cost_blocks(self) -> dict[str, dict[str, Any]]:
        return self.first.cost_blocks() if isinstance(self.first, Metered) else {}

    def close(self) -> None:
        self.first.close()
        self.reranker.close()


# Which endpoint kinds a target's parameter may name.
ROLES = {"embedder": False, "reranker": True}  # parameter -> names a rerank endpoint


def check_endpoint_refs(spec: TargetSpec, endpoints: dict[str, EndpointSpec]) -> None:
    """`?embedder=NAME` / `?reranker=NAME` name an `-e` endpoint of the right kind; `reranker` needs `+rerank`
    and `embedder` is not given with `model` (two models for one stage). Cheap: nothing is sent."""
    if "embedder" in spec.params and "model" in spec.params:
        raise UserError(f"target {spec.text!r}: give embedder= (an endpoint) or model= (a local folder), not both")
    if "reranker" in spec.params and not spec.rerank:
        raise UserError(f"target {spec.text!r}: reranker= needs a '+rerank' target (e.g. bm25+rerank?reranker=NAME)")
    for param, rerank in ROLES.items():
        name = spec.params.get(param)
        if name is None:
            continue
        if name not in endpoints:
            given = ", ".join(endpoints) or "none"
            raise UserError(f"target {spec.text!r}: {param}={name} is not an endpoint given with -e (given: {given})")
        if endpoints[name].is_rerank != rerank:
            wanted = "rerank (tei-rerank, cohere, reference-rerank)" if rerank else "embedding (tei, openai, reference)"
            raise UserError(
                f"target {spec.text!r}: {param}={name} is a {endpoints[name].kind} endpoint; "
                f"{param} takes a {wanted} one"
            )


def embedding_encoder(spec: TargetSpec, options: TargetOptions) -> Encoder:
    """The encoder of a dense stage: the `?embedder=` endpoint, else the in-process reference model
    (`?model=DIR`, --embedding-model, or the bundled MiniLM) under the same code path."""
    name = spec.params.get("embedder")
    if name is None:
        model = spec.params.get("model") or options.embedding_model
        return Encoder(ReferenceEmbedder(spec.name, model), cache=options.cache, owner=spec.name, ledger=options.ledger)
    endpoint = options.endpoints[name]
    opened = open_endpoint(endpoint)
    try:
        return Encoder(
            cast(ServedEmbedder, opened), concurrency(endpoint), options.cache, owner=spec.name, ledger=options.ledger
        )
    except BaseException:
        opened.close()
        raise


def rerank_endpoint(spec: TargetSpec, options: TargetOptions) -> Reranker:
    """The reranker of a `+rerank` stage: the `?reranker=` endpoint, else the --cross-encoder folder in-process."""
    name = spec.params.get("reranker")
    if name is not None:
        return cast(Reranker, open_endpoint(options.endpoints[name]))
    if not options.cross_encoder:
        raise UserError(
            f"target {spec.text!r}: '+rerank' needs ?reranker=NAME (an -e endpoint) or --cross-encoder PATH"
        )
    return ReferenceReranker(spec.name, options.cross_encoder)
