"""A target's `?embedder=` / `?reranker=` endpoint references: checked against the `-e` endpoints, then opened
as the dense stage's encoder or the rerank stage's reranker (else the in-process reference models)."""

from __future__ import annotations

from typing import cast

from bench.core.errors import UserError
from bench.endpoints.base import Reranker
from bench.endpoints.reference import ReferenceEmbedder, ReferenceReranker
from bench.endpoints.spec import EndpointSpec, concurrency, open_endpoint
from bench.targets.base import TargetOptions, TargetSpec
from bench.targets.encoder import Encoder, ServedEmbedder

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
    opened = open_endpoint(endpoint, transport=options.transport)
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
        return cast(Reranker, open_endpoint(options.endpoints[name], transport=options.transport))
    if not options.cross_encoder:
        raise UserError(
            f"target {spec.text!r}: '+rerank' needs ?reranker=NAME (an -e endpoint) or --cross-encoder PATH"
        )
    return ReferenceReranker(spec.name, options.cross_encoder)
