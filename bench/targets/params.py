"""Target-spec parameters (`?key=value`): parsed and checked the same way for every kind."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Generic, TypeVar

from bench.core.errors import UserError
from bench.core.spec_grammar import parse_bool

if TYPE_CHECKING:
    from bench.targets.base import TargetSpec

Choice = TypeVar("Choice", bound=StrEnum)


@dataclass(frozen=True)
class SpecShape(Generic[Choice]):
    """What a kind's spec (`kind:VARIANT+rerank?key=value`) may hold, checked the same way for every kind with
    variants (Open WebUI, LightRAG): its parameters, its variants and the default one, and what to write instead
    of a `+rerank` the kind does not take."""

    params: set[str]
    variants: type[Choice]
    default: Choice
    variant_word: str  # what the kind calls its variant in a message: "mode", "variant"
    rerank_fix: str  # the message's fix for a `+rerank`

    def variant(self, spec: TargetSpec) -> Choice:
        """The spec's variant (the default where none is written), its parameters checked; or one UserError."""
        check_params(spec.params, self.params, spec.text)
        given = spec.variant or self.default
        known = tuple(self.variants)
        if given not in known:
            raise UserError(f"target {spec.text!r}: {self.variant_word} {given!r} unknown (known: {', '.join(known)})")
        if spec.rerank:
            raise UserError(f"target {spec.text!r}: {self.rerank_fix}")
        return self.variants(given)


def check_params(params: dict[str, str], known: set[str], spec: str) -> None:
    unknown = sorted(set(params) - known)
    if unknown:
        raise UserError(
            f"target {spec!r}: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )


def int_param(params: dict[str, str], name: str, default: int, spec: str, minimum: int = 1) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UserError(f"target {spec!r}: {name}={raw!r} is not an integer") from None
    if value < minimum:
        raise UserError(f"target {spec!r}: {name} must be at least {minimum}")
    return value


def float_param(params: dict[str, str], name: str, default: float, spec: str, lo: float, hi: float) -> float:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"target {spec!r}: {name}={raw!r} is not a number") from None
    if not lo <= value <= hi:
        raise UserError(f"target {spec!r}: {name} must lie in [{lo}, {hi}]")
    return value


def bool_param(params: dict[str, str], name: str, default: bool, spec: str) -> bool:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        return parse_bool(raw)
    except ValueError as exc:
        raise UserError(f"target {spec!r}: {name}={exc}") from None


def choice_param(params: dict[str, str], name: str, default: str, spec: str, choices: list[str]) -> str:
    raw = params.get(name)
    if raw is None:
        return default
    if raw.lower() not in choices:
        raise UserError(f"target {spec!r}: {name}={raw!r} is not one of {', '.join(choices)}")
    return raw.lower()
