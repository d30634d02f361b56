"""texts -> vectors through one embedding endpoint (`Encoder`): the cache first, the rest in concurrent requests
of the endpoint's size, each metered (`EmbedMeter`), the cached vectors re-checked once a run."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Protocol, TypedDict, runtime_checkable

import numpy as np

from bench.core.errors import ServerError
from bench.core.progress import console
from bench.endpoints.base import Embedder, Embeddings, EndpointDescription
from bench.endpoints.cache import EmbeddingCache
from bench.targets.base import CacheLedger
from bench.targets.embed_cost import CostBlock, EmbedMeter


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


@dataclass(frozen=True)
class VectorDifference:
    """Cached vs freshly embedded vectors: the lowest cosine and the largest relative norm difference (None: the
    dimensions differ), and why they differ beyond the tolerance (None: they don't)."""

    cosine_min: float | None
    norm_diff_max: float | None
    stale: str | None


class Tolerance(TypedDict):
    cosine_min: float
    norm_diff_max: float


class _CacheCheckRequired(TypedDict):
    texts: int
    tolerance: Tolerance
    wall_ms: float
    verdict: str


class CacheCheckFigures(_CacheCheckRequired, total=False):
    """`describe()`'s `cache_check`; the figures are left out where the dimensions differ."""

    cosine_min: float
    norm_diff_max: float


class EncoderDescription(EndpointDescription, total=False):
    """The encoder's endpoint (its description, under the spec's name) and how the encoder used it."""

    endpoint: str
    concurrency: int
    served_identity: str
    cache: str  # on | off
    cache_check: CacheCheckFigures | None


@dataclass(frozen=True)
class CacheCheck:
    """The re-check of the first cached vectors served (`Encoder._recheck`), as `describe()`'s `cache_check`."""

    texts: int
    difference: VectorDifference
    wall_ms: float
    verdict: str  # match, or stale: why, and that the cache was cleared

    def to_json(self) -> CacheCheckFigures:
        found: CacheCheckFigures = {
            "texts": self.texts,
            "tolerance": {"cosine_min": RECHECK_COSINE, "norm_diff_max": RECHECK_NORM},
            "wall_ms": self.wall_ms,
            "verdict": self.verdict,
        }
        cosine_min, norm_diff_max = self.difference.cosine_min, self.difference.norm_diff_max
        if cosine_min is None or norm_diff_max is None:  # the dimensions differ: no figures
            return found
        return {"texts": self.texts, "cosine_min": cosine_min, "norm_diff_max": norm_diff_max, **found}


def compare_vectors(cached: np.ndarray, fresh: np.ndarray) -> VectorDifference:
    """Figures of cached vs freshly embedded vectors, and why they differ beyond the tolerance."""
    if cached.shape != fresh.shape:
        return VectorDifference(None, None, f"dimension {cached.shape[1]} cached, {fresh.shape[1]} served now")
    norms_cached, norms_fresh = np.linalg.norm(cached, axis=1), np.linalg.norm(fresh, axis=1)
    cosine = (cached * fresh).sum(axis=1) / np.maximum(norms_cached * norms_fresh, 1e-30)
    norm_diff = np.abs(norms_fresh - norms_cached) / np.maximum(norms_cached, 1e-30)
    cosine_min, norm_diff_max = float(cosine.min()), float(norm_diff.max())
    if cosine_min >= RECHECK_COSINE and norm_diff_max <= RECHECK_NORM:
        return VectorDifference(cosine_min, norm_diff_max, None)
    return VectorDifference(
        cosine_min,
        norm_diff_max,
        f"cosine min {cosine_min:.4f} (at least {RECHECK_COSINE} wanted), norms differ by up to "
        f"{norm_diff_max:.2%} (at most {RECHECK_NORM:.0%} wanted)",
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
        self.recheck: CacheCheck | None = None  # the re-check's figures and verdict, once it has run

    def describe(self) -> EncoderDescription:
        return {
            "endpoint": self.endpoint.name,
            **self.endpoint.describe(),
            "concurrency": self.concurrency,
            "served_identity": self.key,
            "cache": "on" if self.cache else "off",
            "cache_check": self.recheck.to_json() if self.recheck else None,
        }

    def blocks(self) -> dict[str, CostBlock]:
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
        difference = compare_vectors(np.vstack([found[i] for i in sample]), np.asarray(fresh, dtype=np.float32))
        wall_ms = (time.perf_counter() - started) * 1000.0
        if difference.stale is None:
            self.recheck = CacheCheck(len(sample), difference, wall_ms, "match")
            return found
        cache.clear()
        verdict = (
            f"stale: {len(sample)} cached texts embedded again differ ({difference.stale}); "
            f"the cache {self.key} was cleared and every text embedded again"
        )
        self.recheck = CacheCheck(len(sample), difference, wall_ms, verdict)
        console.print(
            f"{self.endpoint.name}: cached vectors {verdict}",
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
            pending: set[Future[tuple[list[int], Embeddings]]] = set()
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
