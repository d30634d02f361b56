"""Endpoint specs on the command line: `NAME=KIND@URL[?key=value&...]` or `NAME=reference[?model=PATH]`.

Kinds: tei, tei-rerank, openai, cohere, reference, reference-rerank (docs/endpoints.md has every option).
API keys are never written in a spec: `key_env=VAR` names the environment variable that holds one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import httpx

from bench.core.errors import UserError
from bench.core.spec_grammar import NAME, parse_options
from bench.endpoints.base import Embedder, EndpointKind, Reranker
from bench.endpoints.options import (
    CohereOptions,
    EndpointOptions,
    OpenAIOptions,
    OptionReader,
    ReferenceOptions,
    ReferenceRerankOptions,
    TeiOptions,
    TeiRerankOptions,
    cohere_options,
    openai_options,
    reference_options,
    reference_rerank_options,
    tei_options,
    tei_rerank_options,
)


@dataclass(frozen=True)
class EndpointSpec:
    name: str
    kind: EndpointKind
    url: str | None  # None for the in-process kinds
    params: dict[str, str]  # as written: what load's records and keys show
    options: EndpointOptions  # typed and checked when parsed

    @property
    def is_rerank(self) -> bool:
        return ENDPOINT_KINDS[self.kind].rerank


@dataclass(frozen=True)
class _Kind:
    rerank: bool
    needs_url: bool
    options: tuple[str, ...]
    read: Callable[[OptionReader], EndpointOptions]
    required: tuple[str, ...] = ()


ENDPOINT_KINDS: dict[EndpointKind, _Kind] = {
    EndpointKind.TEI: _Kind(
        False,
        True,
        (
            "key_env",
            "batch",
            "normalize",
            "truncate",
            "truncation_direction",
            "dimensions",
            "prompt_name",
            "concurrency",
            "timeout",
        ),
        tei_options,
    ),
    EndpointKind.TEI_RERANK: _Kind(
        True, True, ("key_env", "batch", "raw_scores", "truncate", "timeout"), tei_rerank_options
    ),
    EndpointKind.OPENAI: _Kind(
        False,
        True,
        ("model", "key_env", "batch", "encoding", "dimensions", "concurrency", "timeout", "tokenizer"),
        openai_options,
        required=("model",),
    ),
    EndpointKind.COHERE: _Kind(True, True, ("model", "key_env", "raw_scores", "batch", "timeout"), cohere_options),
    EndpointKind.REFERENCE: _Kind(False, False, ("model", "batch", "cache"), reference_options),
    EndpointKind.REFERENCE_RERANK: _Kind(
        True, False, ("model", "batch"), reference_rerank_options, required=("model",)
    ),
}


def parse_endpoint_spec(text: str) -> EndpointSpec:
    """`NAME=KIND@URL?opts` -> EndpointSpec, or a UserError that quotes the spec."""
    name, sep, rest = text.partition("=")
    if not sep or not NAME.fullmatch(name):
        raise UserError(f"endpoint spec {text!r}: expected NAME=KIND@URL[?options] (NAME: letters, digits, _ . -)")
    kind, at, location = rest.partition("@")
    query = ""
    if at:
        location, _, query = location.partition("?")
    else:
        kind, _, query = kind.partition("?")
    if kind not in ENDPOINT_KINDS:
        raise UserError(f"endpoint {name}: unknown kind {kind!r} (known: {', '.join(ENDPOINT_KINDS)})")
    spec_kind = ENDPOINT_KINDS[EndpointKind(kind)]
    url: str | None = None
    if spec_kind.needs_url:
        parts = urlsplit(location)
        if not at or parts.scheme not in ("http", "https") or not parts.netloc:
            raise UserError(f"endpoint {name}: {kind} needs an http(s) URL, as {kind}@http://host:port")
        url = location.rstrip("/")
    elif at:
        raise UserError(f"endpoint {name}: {kind} runs in-process and takes no URL (use {kind}?model=PATH)")
    params = parse_options(query, f"endpoint {name}")
    unknown = sorted(set(params) - set(spec_kind.options))
    if unknown:
        raise UserError(
            f"endpoint {name}: unknown option(s) {', '.join(unknown)} for {kind} (known: "
            f"{', '.join(spec_kind.options)})"
        )
    missing = [o for o in spec_kind.required if not params.get(o)]
    if missing:
        raise UserError(f"endpoint {name}: {kind} needs {', '.join(f'{m}=...' for m in missing)}")
    # Every value typed now: a bad one is refused with the spec, before anything is loaded or sent.
    options = spec_kind.read(OptionReader(name, params))
    return EndpointSpec(name, EndpointKind(kind), url, params, options)


def concurrency(spec: EndpointSpec) -> int | None:
    """Requests in flight while a corpus is embedded (`?concurrency=N`); None: the default."""
    return spec.options.concurrency if isinstance(spec.options, (TeiOptions, OpenAIOptions)) else None


_HTTP = (TeiOptions, TeiRerankOptions, OpenAIOptions, CohereOptions)


def open_endpoint(
    spec: EndpointSpec, timeout_s: float | None = None, transport: httpx.BaseTransport | None = None
) -> Embedder | Reranker:
    """Build the client for a parsed spec (nothing is sent yet; in-process models load on first use). Each of
    an HTTP endpoint's requests ends after `timeout_s` when given (load and size pass their --timeout), else
    after the spec's `timeout=`: a deadline for the whole request, connect to last byte (bench.core.http).
    `transport` replaces the network (httpx.MockTransport in tests)."""
    options = spec.options
    if isinstance(options, _HTTP):
        url = _url(spec)
        timed = options if timeout_s is None else replace(options, timeout_s=timeout_s)
        return _http_endpoint(spec.name, url, timed, transport)
    return _reference(spec.name, options)


def _url(spec: EndpointSpec) -> str:
    """The URL of an HTTP endpoint (`parse_endpoint_spec` gives every HTTP kind one)."""
    if spec.url is None:
        raise UserError(f"endpoint {spec.name}: {spec.kind} needs an http(s) URL, as {spec.kind}@http://host:port")
    return spec.url


def _http_endpoint(
    name: str,
    url: str,
    options: TeiOptions | TeiRerankOptions | OpenAIOptions | CohereOptions,
    transport: httpx.BaseTransport | None,
) -> Embedder | Reranker:
    if isinstance(options, TeiOptions):
        from bench.endpoints.tei import TeiEmbedder

        return TeiEmbedder(name, url, options, transport)
    if isinstance(options, TeiRerankOptions):
        from bench.endpoints.tei import TeiReranker

        return TeiReranker(name, url, options, transport)
    if isinstance(options, OpenAIOptions):
        from bench.endpoints.openai import OpenAIEmbedder

        return OpenAIEmbedder(name, url, options, transport)
    from bench.endpoints.cohere import CohereReranker

    return CohereReranker(name, url, options, transport)


def _reference(name: str, options: ReferenceOptions | ReferenceRerankOptions) -> Embedder | Reranker:
    """reference / reference-rerank: in-process models, no timeout."""
    from bench.endpoints.reference import ReferenceEmbedder, ReferenceReranker

    try:
        if isinstance(options, ReferenceOptions):
            return ReferenceEmbedder(name, options.model, options.batch, cache=options.cache)
        return ReferenceReranker(name, options.model, options.batch)
    except UserError as exc:
        raise UserError(f"endpoint {name}: {exc}") from exc
