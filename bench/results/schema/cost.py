"""The quality record's embedding cost blocks (`TargetRecord.cost_blocks`: `ingest`, `query_embed`), typed where
the targets fill them (bench/targets/embed_cost.py) and where the report, gate and history read them. A block of an
older file may lack keys added since (`over_limit_by`, `shared`, ...): readers take them with `.get`."""

from __future__ import annotations

from typing import NotRequired, TypedDict, cast


class SentFigures(TypedDict):
    """What the texts a phase sent cost, as its block shows them (`SentCost.own_figures`)."""

    requests: int
    tokens: int | None
    tokens_by: str
    wall_s: float
    texts_per_s: float | None
    tokens_per_s: float | None


SharedCost = TypedDict(  # the cached texts another target of the run embedded, with what they cost it
    "SharedCost",
    {
        "with": str,
        "phase": str,
        "texts": int,
        "texts_sent": NotRequired[int],
        "requests": NotRequired[int],
        "tokens": NotRequired[int | None],
        "tokens_by": NotRequired[str],
        "wall_s": NotRequired[float],
        "texts_per_s": NotRequired[float | None],
        "tokens_per_s": NotRequired[float | None],
    },
)


class CostBlock(SentFigures):
    """A phase's cost block (`ingest`, `query_embed`) in the quality record's `cost_blocks`."""

    texts: int
    from_cache: int
    from_earlier_run: int
    shared: list[SharedCost]
    request_ms: dict[str, float]
    retries: dict[str, int]  # cause -> retries
    splits: dict[str, int]  # cause -> requests split
    over_limit: int | None
    over_limit_by: str


# A record without the phase's block reads as this one (bench.results.schema.quality.TargetRecord.cost_block): no
# key, so each `.get` is None, never written or changed.
NO_COST_BLOCK = cast(CostBlock, {})
