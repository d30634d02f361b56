"""Endpoint specs on the command line: `NAME=KIND@URL[?key=value&...]` or `NAME=reference[?model=PATH]`.

Kinds: tei, tei-rerank, openai, cohere, reference, reference-rerank (docs/endpoints.md has every option).
API keys are never written in a spec: `key_env=VAR` names the environment variable that holds one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar
from urllib.parse import urlsplit

from bench.core import values
from bench.core.errors import UserError
from bench.core.spec_grammar import BOOLEAN_HELP, NAME, parse_bool, parse_options
from bench.endpoints.base import Embedder, Reranker

T = TypeVar("T")


class EndpointKind(StrEnum):
    """What serves an endpoint, as its spec names it (`NAME=KIND@URL`)."""

    TEI = "tei"
    TEI_RERANK = "tei-rerank"
    OPENAI = "openai"
    COHERE = "cohere"
    REFERENCE = "reference"
    REFERENCE_RERANK = "reference-rerank"


@dataclass(frozen=True)
class EndpointSpec:
    name: str
    kind: EndpointKind
    url: str | None  # None for the in-process kinds
    params: dict[str, str] = field(default_factory=dict)

    @property
    def is_rerank(self) -> bool:
        return KINDS[self.kind].rerank


@dataclass(frozen=True)
class _Kind:
    rerank: bool
    needs_url: bool
    options: tuple[str, ...]
    required: tuple[str, ...] = ()


# Counts bounded as load's options are (bench/core/values.py): checked when the spec is parsed, before any work.
BOUNDED: dict[str, values.Count] = {"batch": values.TEXTS_PER_REQUEST, "concurrency": values.USERS}

KINDS: dict[EndpointKind, _Kind] = {
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
    ),
    EndpointKind.TEI_RERANK: _Kind(True, True, ("key_env", "batch", "raw_scores", "truncate", "timeout")),
    EndpointKind.OPENAI: _Kind(
        False,
        True,
        ("model", "key_env", "batch", "encoding", "dimensions", "concurrency", "timeout", "tokenizer"),
        required=("model",),
    ),
    EndpointKind.COHERE: _Kind(True, True, ("model", "key_env", "raw_scores", "batch", "timeout")),
    EndpointKind.REFERENCE: _Kind(False, False, ("model", "batch", "cache")),
    EndpointKind.REFERENCE_RERANK: _Kind(True, False, ("model", "batch"), required=("model",)),
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
    if kind not in KINDS:
        raise UserError(f"endpoint {name}: unknown kind {kind!r} (known: {', '.join(KINDS)})")
    spec_kind = KINDS[EndpointKind(kind)]
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
    spec = EndpointSpec(name, EndpointKind(kind), url, params)
    for key in BOUNDED:
        _int(spec, key)
    if "timeout" in params:
        request_timeout(spec)  # a bad duration is refused with the spec, before anything is sent
    return spec


def _typed(spec: EndpointSpec, key: str, convert: Callable[[str], T], what: str) -> T | None:
    value = spec.params.get(key)
    if value is None:
        return None
    try:
        return convert(value)
    except (ValueError, KeyError):  # each converter raises one of these for a value it does not take
        raise UserError(f"endpoint {spec.name}: option {key}={value!r} is not {what}") from None


def _int(spec: EndpointSpec, key: str) -> int | None:
    if key in BOUNDED and key in spec.params:
        return values.number(f"endpoint {spec.name}: {key}", spec.params[key], BOUNDED[key])
    return _typed(spec, key, lambda v: int(v) if int(v) > 0 else int("x"), "a positive integer")


def _bool(spec: EndpointSpec, key: str) -> bool | None:
    return _typed(spec, key, parse_bool, f"a boolean ({BOOLEAN_HELP})")


def concurrency(spec: EndpointSpec) -> int | None:
    """Requests in flight while a corpus is embedded (`?concurrency=N`); None: the default."""
    return _int(spec, "concurrency")


DEFAULT_TIMEOUT = "120s"


def request_timeout(spec: EndpointSpec) -> float:
    """Seconds each request to the endpoint may take in all, `?timeout=` (default 120s)."""
    text = spec.params.get("timeout", DEFAULT_TIMEOUT)
    return values.duration(f"endpoint {spec.name}: option timeout=", text, values.TIMEOUT_SECONDS)


def open_endpoint(spec: EndpointSpec, timeout_s: float | None = None) -> Embedder | Reranker:
    """Build the client for a parsed spec (nothing is sent yet; in-process models load on first use). Each of
    an HTTP endpoint's requests ends after `timeout_s` when given (load and size pass their --timeout), else
    after the spec's `timeout=`: a deadline for the whole request, connect to last byte (bench.core.http)."""
    openers: dict[EndpointKind, Callable[[EndpointSpec, float], Embedder | Reranker]] = {
        EndpointKind.TEI: _tei,
        EndpointKind.TEI_RERANK: _tei_rerank,
        EndpointKind.OPENAI: _openai,
        EndpointKind.COHERE: _cohere,
    }
    opener = openers.get(spec.kind, _reference)
    return opener(spec, request_timeout(spec) if timeout_s is None else timeout_s)


def _url(spec: EndpointSpec) -> str:
    """The URL of an HTTP endpoint (`parse_endpoint_spec` gives every HTTP kind one)."""
    if spec.url is None:
        raise UserError(f"endpoint {spec.name}: {spec.kind} needs an http(s) URL, as {spec.kind}@http://host:port")
    return spec.url


def _tei(spec: EndpointSpec, timeout_s: float) -> Embedder:
    from bench.endpoints.tei import TeiEmbedder

    direction = _typed(
        spec, "truncation_direction", lambda v: {"left": "left", "right": "right"}[v.lower()], "left or right"
    )
    normalize = _bool(spec, "normalize")
    return TeiEmbedder(
        spec.name,
        _url(spec),
        spec.params.get("key_env"),
        _int(spec, "batch"),
        normalize=True if normalize is None else normalize,
        truncate=_bool(spec, "truncate"),
        truncation_direction=direction,
        dimensions=_int(spec, "dimensions"),
        prompt_name=spec.params.get("prompt_name"),
        timeout_s=timeout_s,
    )


def _tei_rerank(spec: EndpointSpec, timeout_s: float) -> Reranker:
    from bench.endpoints.tei import TeiReranker

    return TeiReranker(
        spec.name,
        _url(spec),
        spec.params.get("key_env"),
        _int(spec, "batch"),
        raw_scores=bool(_bool(spec, "raw_scores")),
        truncate=_bool(spec, "truncate"),
        timeout_s=timeout_s,
    )


def _openai(spec: EndpointSpec, timeout_s: float) -> Embedder:
    from bench.endpoints.openai import OpenAIEmbedder

    p = spec.params
    encoding = _typed(
        spec,
        "encoding",
        lambda v: {"float": "float", "base64": "base64", "none": None}[v.lower()],
        "float, base64 or none",
    )
    return OpenAIEmbedder(
        spec.name,
        _url(spec),
        p["model"],
        p.get("key_env"),
        _int(spec, "batch") or 32,
        encoding_format=encoding if "encoding" in p else "float",
        dimensions=_int(spec, "dimensions"),
        timeout_s=timeout_s,
        tokenizer=p.get("tokenizer"),
    )


def _cohere(spec: EndpointSpec, timeout_s: float) -> Reranker:
    from bench.endpoints.cohere import CohereReranker

    return CohereReranker(
        spec.name,
        _url(spec),
        spec.params.get("model"),
        spec.params.get("key_env"),
        raw_scores=_bool(spec, "raw_scores"),
        timeout_s=timeout_s,
        batch_size=_int(spec, "batch"),
    )


def _reference(spec: EndpointSpec, timeout_s: float) -> Embedder | Reranker:
    """reference / reference-rerank: in-process models, no timeout."""
    from bench.endpoints.reference import ReferenceEmbedder, ReferenceReranker

    batch = _int(spec, "batch") or 32
    cache = bool(_bool(spec, "cache"))
    try:
        if spec.kind == EndpointKind.REFERENCE:
            return ReferenceEmbedder(spec.name, spec.params.get("model") or None, batch, cache=cache)
        return ReferenceReranker(spec.name, spec.params["model"], batch)
    except UserError as exc:
        raise UserError(f"endpoint {spec.name}: {exc}") from exc
