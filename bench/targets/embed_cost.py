"""What embedding a set of texts cost: the `ingest` and `query_embed` blocks of a target that names an endpoint
(texts, tokens, wall, rates, request latency, retries and splits by cause, texts from the cache)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from bench.core.percentiles import percentiles
from bench.endpoints.base import CallTiming

# the blocks' shapes live with the record that stores them; re-exported for the targets that fill them
from bench.results.schema.cost import CostBlock as CostBlock
from bench.results.schema.cost import SentFigures as SentFigures
from bench.results.schema.cost import SharedCost as SharedCost


class SentCostFigures(SentFigures):
    texts_sent: int


@runtime_checkable
class Metered(Protocol):
    """A target that measures what its components cost (`ingest`, `query_embed` blocks)."""

    def cost_blocks(self) -> dict[str, CostBlock]: ...


@dataclass(frozen=True)
class SentCost:
    """What the texts a phase sent cost (those it read from the cache cost nothing): in its own block, and in the
    block of each target that read them from the cache (`shared`)."""

    texts_sent: int
    requests: int
    tokens: int | None
    tokens_by: str  # where the token count comes from, or why there is none
    wall_s: float
    texts_per_s: float | None
    tokens_per_s: float | None

    def to_json(self) -> SentCostFigures:
        return {"texts_sent": self.texts_sent, **self.own_figures()}

    def own_figures(self) -> SentFigures:
        """The figures a phase's own block shows (its texts counted there: sent, cached, shared)."""
        return {
            "requests": self.requests,
            "tokens": self.tokens,
            "tokens_by": self.tokens_by,
            "wall_s": self.wall_s,
            "texts_per_s": self.texts_per_s,
            "tokens_per_s": self.tokens_per_s,
        }


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

    def measured(self) -> SentCost:
        """What the texts this meter sent cost: the figures a target sharing them is credited."""
        sent = self.texts - self.from_cache
        return SentCost(
            texts_sent=sent,
            requests=len(self.request_ms),
            tokens=self.tokens,
            tokens_by=self.tokens_by,
            wall_s=self.wall_s,
            texts_per_s=sent / self.wall_s if sent and self.wall_s > 0 else None,
            tokens_per_s=self.tokens / self.wall_s if self.tokens is not None and self.wall_s > 0 else None,
        )

    def _shared(
        self, target: str, phase: str, texts: int, paid: dict[tuple[str, str], Callable[[], SentCost]]
    ) -> SharedCost:
        known: SharedCost = {"with": target, "phase": phase, "texts": texts}
        return {**known, **paid[(target, phase)]().to_json()} if (target, phase) in paid else known

    def block(self, costs: dict[tuple[str, str], Callable[[], SentCost]] | None = None) -> CostBlock:
        """The phase's cost block; `costs` (CacheLedger.costs) gives what each producer of its cached texts paid."""
        # Texts another target of this run embedded are credited its cost; those this target embedded itself in
        # another phase or call are its own cost already; the rest came from an earlier run.
        paid = costs or {}
        shared = [
            self._shared(target, phase, n, paid)
            for (target, phase), n in sorted(self.made_in_run.items())
            if target != self.owner
        ]
        return {
            "texts": self.texts,
            "from_cache": self.from_cache,
            "from_earlier_run": self.from_cache - sum(self.made_in_run.values()),
            "shared": shared,
            **self.measured().own_figures(),
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
