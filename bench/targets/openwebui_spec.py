"""An Open WebUI target's spec: its parameters, checked and typed when the spec is parsed (`parse_target_spec`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bench.core.errors import UserError
from bench.results.schema.run import STORE_PARAM
from bench.targets.base import TargetSpec
from bench.targets.hops import Nesting
from bench.targets.openwebui_settings import Variant
from bench.targets.openwebui_store import stated_store
from bench.targets.params import SpecShape, float_param, int_param

PARAMS = {
    "kb",
    "endpoint",
    "bm25_weight",
    "reranker_url",
    "reranker_model",
    "reranker_timeout",
    "concurrency",
    "query_concurrency",
    "max_chunks",
    "meter",
    "meter_nest",
    STORE_PARAM,
}

SHAPE = SpecShape(PARAMS, Variant, Variant.VECTOR, "variant", "use the 'openwebui:rerank' variant, not '+rerank'")


class QueryRoute(StrEnum):
    """Open WebUI's retrieval route queried (`endpoint=`): `/api/v1/retrieval/query/doc` or `/collection`."""

    DOC = "doc"
    COLLECTION = "collection"


@dataclass(frozen=True)
class OpenWebUISettings:
    """An Open WebUI spec's variant and parameters, typed and checked when the spec is parsed (`parse_target_spec`)."""

    variant: Variant
    endpoint: QueryRoute
    kb_name: str | None
    bm25_weight: float
    reranker_url: str | None
    reranker_model: str | None
    reranker_timeout: str
    concurrency: int
    query_concurrency: int  # 1: unloaded latency
    max_chunks: int  # 0: 16 × depth
    meter: str | None
    nesting: Nesting
    store: str | None  # the vector store the user states (`store=`); Open WebUI 0.12.4 does not report its own


def openwebui_settings(spec: TargetSpec) -> OpenWebUISettings:
    """The spec's settings, or one UserError naming the spec (nothing is sent)."""
    variant = SHAPE.variant(spec)
    params = spec.params
    endpoint = params.get("endpoint", QueryRoute.DOC)
    if endpoint not in tuple(QueryRoute):
        raise UserError(f"target {spec.text!r}: endpoint must be 'doc' or 'collection'")
    bm25_weight = float_param(params, "bm25_weight", 0.5, spec.text, 0.0, 1.0)
    if variant == Variant.RERANK and not (params.get("reranker_url") and params.get("reranker_model")):
        raise UserError(f"target {spec.text!r}: the rerank variant needs reranker_url=URL&reranker_model=NAME")
    return OpenWebUISettings(
        variant=variant,
        endpoint=QueryRoute(endpoint),
        kb_name=params.get("kb"),
        bm25_weight=bm25_weight,
        reranker_url=params.get("reranker_url"),
        reranker_model=params.get("reranker_model"),
        reranker_timeout=params.get("reranker_timeout", "30"),
        concurrency=int_param(params, "concurrency", 4, spec.text),
        query_concurrency=int_param(params, "query_concurrency", 1, spec.text),
        max_chunks=int_param(params, "max_chunks", 0, spec.text, minimum=0),
        meter=params.get("meter") or None,
        nesting=Nesting.parse(params.get("meter_nest"), spec.text),
        store=stated_store(params.get(STORE_PARAM), spec.text),
    )
