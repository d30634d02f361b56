"""Which targets of a quality run are a reranked target and its own first stage: the pairs the rerank-gain row
reads, tested by `quality` whatever the background rate they ran at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from bench.core.secrets import MASK, is_secret_name, mask
from bench.quality.under_load import split_loaded_name
from bench.results.schema import TargetSpecRecord
from bench.targets.base import TargetSpec

# Options that belong to the rerank stage, not to the first stage (`X+rerank?reranker=rr` pairs with `X`).
RERANK_PARAMS = frozenset({"reranker"})


class ParsedSpec(Protocol):
    """A parsed target spec: as the run holds it (TargetSpec) or as its results record keeps it."""

    @property
    def kind(self) -> str: ...
    @property
    def variant(self) -> str | None: ...
    @property
    def url(self) -> str | None: ...
    @property
    def rerank(self) -> bool: ...
    @property
    def params(self) -> dict[str, str]: ...


def spec_record(spec: TargetSpec) -> TargetSpecRecord:
    """The parsed spec as the results keep it, secrets masked (as in the target's name and public text)."""
    params = {k: MASK if is_secret_name(k) else v for k, v in sorted(spec.params.items())}
    return TargetSpecRecord(spec.kind, spec.rerank, spec.variant, mask(spec.url) if spec.url else None, params)


def _first_stage_key(name: str, spec: ParsedSpec) -> tuple[object, ...]:
    """What a first stage is, and the background rate its run had (`NAME@bgRATE`; 0 without --background)."""
    params = tuple(sorted((k, v) for k, v in spec.params.items() if k not in RERANK_PARAMS))
    rate = (split_loaded_name(name) or (name, 0.0))[1]
    return spec.kind, spec.variant, spec.url, params, rate


def rerank_pairs(specs: Mapping[str, ParsedSpec]) -> list[tuple[str, str]]:
    """(first stage X, X+rerank) by name for every reranked target whose first stage ran as a target of its own at
    the same background rate: a reranker's gain under load is against its first stage under the same load."""
    firsts = {_first_stage_key(name, s): name for name, s in list(specs.items())[::-1] if not s.rerank}
    return [
        (firsts[key], name) for name, s in specs.items() if s.rerank and (key := _first_stage_key(name, s)) in firsts
    ]
