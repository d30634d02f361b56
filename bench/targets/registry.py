"""Parse target specs and build targets. Each kind registers one factory here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace

from bench.core.errors import UserError
from bench.core.spec_grammar import NAME, parse_options
from bench.targets.base import Target, TargetKind, TargetOptions, TargetSpec

Factory = Callable[[TargetSpec, TargetOptions], Target]


def _lazy(module: str, function: str) -> Factory:
    """A factory (a function or a target class) that imports its module on first use, so that `ragbench --help`
    stays fast."""

    def factory(spec: TargetSpec, options: TargetOptions) -> Target:
        build: Factory = getattr(importlib.import_module(module), function)
        return build(spec, options)

    return factory


# kind -> the factory that builds its targets (tests register further kinds)
TARGET_FACTORIES: dict[str, Factory] = {
    TargetKind.BM25: _lazy("bench.targets.local", "build_local"),
    TargetKind.DENSE: _lazy("bench.targets.local", "build_local"),
    TargetKind.HYBRID: _lazy("bench.targets.local", "build_local"),
    TargetKind.OPENWEBUI: _lazy("bench.targets.openwebui", "OpenWebUITarget"),
    TargetKind.LIGHTRAG: _lazy("bench.targets.lightrag", "LightRAGTarget"),
}


# kind -> the function that types and checks its settings (`TargetSpec.settings`)
SETTINGS: dict[str, tuple[str, str]] = {
    TargetKind.OPENWEBUI: ("bench.targets.openwebui", "openwebui_settings"),
    TargetKind.LIGHTRAG: ("bench.targets.lightrag", "lightrag_settings"),
}


def split_name(text: str) -> tuple[str | None, str]:
    """`NAME=SPEC` -> (NAME, SPEC); a bare spec -> (None, SPEC). The `=` of a `?key=value` parameter
    is not a name's: what precedes it contains `?`."""
    head, sep, spec = text.partition("=")
    if not sep or any(c in head for c in ":?@+/"):
        return None, text
    if not NAME.fullmatch(head):
        raise UserError(f"target {text!r}: name {head!r} may hold only letters, digits, _ . - (NAME=SPEC)")
    if not spec.strip():
        raise UserError(f"target {text!r}: nothing after '{head}=' (expected NAME=SPEC)")
    return head, spec


def parse_target_spec(text: str) -> TargetSpec:
    """`[NAME=]kind[:variant][+rerank][@url][?k=v&...]`, e.g. `hybrid:weighted?bm25_weight=0.3`,
    `prod=openwebui:hybrid@http://localhost:8080`, `bm25+rerank`; its kind's settings checked."""
    return check_settings(parse_spec_text(text))


def check_settings(spec: TargetSpec) -> TargetSpec:
    """The spec with its kind's typed settings (Open WebUI, LightRAG): a bad value is refused now, before anything
    is loaded or started."""
    if spec.kind in SETTINGS:
        module, function = SETTINGS[spec.kind]
        spec.settings = getattr(importlib.import_module(module), function)(spec)
    return spec


def parse_spec_text(text: str) -> TargetSpec:
    """The spec's grammar alone, its parameters not yet checked against its kind's (a command that takes some of
    its own off first: grow's `pid=` and `data_dir=`)."""
    given_name, text = split_name(text)
    rest, _, query = text.partition("?")
    rest, _, url = rest.partition("@")
    rerank = rest.endswith("+rerank")
    if rerank:
        rest = rest[: -len("+rerank")]
    kind, _, variant = rest.partition(":")
    kind = kind.strip().lower()
    if not kind:
        raise UserError(f"target {text!r}: empty kind (expected kind[:variant][+rerank][@url][?option=value])")
    if kind not in TARGET_FACTORIES:
        raise UserError(f"target {text!r}: unknown kind {kind!r} (known: {', '.join(sorted(TARGET_FACTORIES))})")
    params = parse_options(query, f"target {text!r}")
    if url:
        _check_url(text, url)
    return TargetSpec(
        text=text,
        kind=kind,
        variant=variant or None,
        rerank=rerank,
        url=url or None,
        params=params,
        given_name=given_name,
    )


def _check_url(text: str, url: str) -> None:
    """A URL without its scheme (`openwebui@localhost:8080`) is one clear line before anything runs, not an HTTP
    client's "unsupported protocol 'localhost://'" once the run began."""
    scheme, sep, _ = url.partition("://")
    if not sep:
        example = url if url.isprintable() and url.strip() == url else "HOST:PORT"  # the error stays one line
        raise UserError(f"target {text!r}: URL {url!r} has no scheme: write http://{example} (or https://)")
    if scheme.lower() not in ("http", "https"):
        raise UserError(f"target {text!r}: URL {url!r}: scheme {scheme!r} is not http or https")


def build_target(spec: TargetSpec, options: TargetOptions) -> Target:
    """The target of a spec; `+rerank` puts the one rerank stage after it (`?reranker=` is that stage's own
    parameter, so the first stage never sees it). The spec's endpoint references are checked already
    (`check_endpoint_refs`, with the command's other options)."""
    from bench.targets.endpoint_refs import rerank_endpoint
    from bench.targets.rerank_stage import RerankStage

    first_spec = replace(spec, params={k: v for k, v in spec.params.items() if k != "reranker"})
    if not spec.rerank:
        return TARGET_FACTORIES[spec.kind](first_spec, options)
    reranker = rerank_endpoint(spec, options)
    try:
        target = TARGET_FACTORIES[spec.kind](first_spec, options)
    except BaseException:
        reranker.close()
        raise
    # An endpoint's target is measured per query, as its users meet it.
    per_query = any(k in spec.params for k in ("reranker", "embedder"))
    return RerankStage(target, reranker, options.rerank_depth, name=spec.name, per_query=per_query)
