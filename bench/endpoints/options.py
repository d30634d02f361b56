"""An endpoint spec's options, typed per kind and checked when the spec is parsed (`parse_endpoint_spec`): a value
an endpoint would refuse (`normalize=maybe`, `dimensions=abc`) is one line before anything is loaded or sent, and
the endpoint constructors take the record as it is (they only build)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from bench.core import values
from bench.core.errors import UserError
from bench.core.spec_grammar import BOOLEAN_HELP, parse_bool

T = TypeVar("T")

DEFAULT_TIMEOUT = "120s"
DEFAULT_TIMEOUT_S = 120.0

# Counts bounded as load's options are (bench/core/values.py).
BOUNDED: dict[str, values.Count] = {"batch": values.TEXTS_PER_REQUEST, "concurrency": values.USERS}


@dataclass(frozen=True)
class TeiOptions:
    """`tei`: TEI's /embed. `batch` None: the server's max_client_batch_size; `truncation_direction` left | right."""

    key_env: str | None = None
    batch: int | None = None
    normalize: bool = True
    truncate: bool | None = None
    truncation_direction: str | None = None
    dimensions: int | None = None
    prompt_name: str | None = None
    concurrency: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class TeiRerankOptions:
    """`tei-rerank`: TEI's /rerank."""

    key_env: str | None = None
    batch: int | None = None
    raw_scores: bool = False
    truncate: bool | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class OpenAIOptions:
    """`openai`: POST {base}/embeddings. `encoding` None: no encoding_format sent; `tokenizer` a tokenizer.json."""

    model: str
    key_env: str | None = None
    batch: int = 32
    encoding: str | None = "float"
    dimensions: int | None = None
    concurrency: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    tokenizer: str | None = None


@dataclass(frozen=True)
class CohereOptions:
    """`cohere`: a Cohere-shaped rerank route. `batch` None: all documents in one request; `raw_scores` None:
    not sent."""

    model: str | None = None
    key_env: str | None = None
    raw_scores: bool | None = None
    batch: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class ReferenceOptions:
    """`reference`: sentence-transformers in-process (`model` None: the bundled MiniLM)."""

    model: str | None = None
    batch: int = 32
    cache: bool = False


@dataclass(frozen=True)
class ReferenceRerankOptions:
    """`reference-rerank`: a CrossEncoder in-process."""

    model: str
    batch: int = 32


EndpointOptions = (
    TeiOptions | TeiRerankOptions | OpenAIOptions | CohereOptions | ReferenceOptions | ReferenceRerankOptions
)


class OptionReader:
    """One spec's `?key=value` options read as typed values; a value that is not one is a UserError naming the
    endpoint and the option."""

    def __init__(self, name: str, params: dict[str, str]):
        self.name = name
        self.params = params

    def text(self, key: str) -> str | None:
        return self.params.get(key)

    def typed(self, key: str, convert: Callable[[str], T], what: str) -> T | None:
        value = self.params.get(key)
        if value is None:
            return None
        try:
            return convert(value)
        except (ValueError, KeyError):  # each converter raises one of these for a value it does not take
            raise UserError(f"endpoint {self.name}: option {key}={value!r} is not {what}") from None

    def count(self, key: str) -> int | None:
        """A positive integer; `batch` and `concurrency` within load's bounds."""
        if key in BOUNDED and key in self.params:
            return values.number(f"endpoint {self.name}: {key}", self.params[key], BOUNDED[key])
        return self.typed(key, lambda v: int(v) if int(v) > 0 else int("x"), "a positive integer")

    def flag(self, key: str) -> bool | None:
        return self.typed(key, parse_bool, f"a boolean ({BOOLEAN_HELP})")

    def timeout_s(self) -> float:
        """Seconds each request may take in all, `?timeout=` (default 120s)."""
        text = self.params.get("timeout", DEFAULT_TIMEOUT)
        return values.duration(f"endpoint {self.name}: option timeout=", text, values.TIMEOUT_SECONDS)


def tei_options(read: OptionReader) -> TeiOptions:
    direction = read.typed(
        "truncation_direction", lambda v: {"left": "left", "right": "right"}[v.lower()], "left or right"
    )
    normalize = read.flag("normalize")
    return TeiOptions(
        key_env=read.text("key_env"),
        batch=read.count("batch"),
        normalize=True if normalize is None else normalize,
        truncate=read.flag("truncate"),
        truncation_direction=direction,
        dimensions=read.count("dimensions"),
        prompt_name=read.text("prompt_name"),
        concurrency=read.count("concurrency"),
        timeout_s=read.timeout_s(),
    )


def tei_rerank_options(read: OptionReader) -> TeiRerankOptions:
    return TeiRerankOptions(
        key_env=read.text("key_env"),
        batch=read.count("batch"),
        raw_scores=bool(read.flag("raw_scores")),
        truncate=read.flag("truncate"),
        timeout_s=read.timeout_s(),
    )


def openai_options(read: OptionReader) -> OpenAIOptions:
    encoding = read.typed(
        "encoding", lambda v: {"float": "float", "base64": "base64", "none": None}[v.lower()], "float, base64 or none"
    )
    return OpenAIOptions(
        model=read.text("model") or "",  # required: `parse_endpoint_spec` refuses a spec without it
        key_env=read.text("key_env"),
        batch=read.count("batch") or 32,
        encoding=encoding if "encoding" in read.params else "float",
        dimensions=read.count("dimensions"),
        concurrency=read.count("concurrency"),
        timeout_s=read.timeout_s(),
        tokenizer=read.text("tokenizer"),
    )


def cohere_options(read: OptionReader) -> CohereOptions:
    return CohereOptions(
        model=read.text("model"),
        key_env=read.text("key_env"),
        raw_scores=read.flag("raw_scores"),
        batch=read.count("batch"),
        timeout_s=read.timeout_s(),
    )


def reference_options(read: OptionReader) -> ReferenceOptions:
    return ReferenceOptions(
        model=read.text("model") or None, batch=read.count("batch") or 32, cache=bool(read.flag("cache"))
    )


def reference_rerank_options(read: OptionReader) -> ReferenceRerankOptions:
    return ReferenceRerankOptions(model=read.text("model") or "", batch=read.count("batch") or 32)
