"""Each JSON value of a results line checked against its record field's annotation, and the typed record built."""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core.errors import InputError
from bench.results.schema.conventions import open_enum


def _is_enum(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, enum.Enum)


@functools.cache
def _checker(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value fits a record field's annotation (null stands for NaN in a float field; a nested
    block is a JSON object whose fields fit theirs); built once per annotation, since a results file has hundreds
    of thousands of values."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    if origin in (typing.Union, types.UnionType):
        parts = [_checker(a) for a in args]
        return lambda value: any(part(value) for part in parts)
    if hint is type(None):
        return lambda value: value is None
    if hint is float:  # JSON numbers arrive as int or float (bool is its own type)
        return lambda value: value is None or type(value) is float or type(value) is int
    if _is_enum(hint):
        allowed = frozenset(member.value for member in hint)
        return lambda value: type(value) is str and value in allowed
    if hint in (bool, int, str):
        return lambda value: type(value) is hint
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: type(value) is dict and _wrong_field(hint, value) is None
    if typing.is_typeddict(hint):  # a wire block kept as its JSON object (bench.results.schema's TypedDicts)
        return lambda value: type(value) is dict
    if origin in (dict, list):
        item = _checker(args[-1])

        def every(value: Any) -> bool:
            return all(map(item, value.values() if origin is dict else value))

        return lambda value: type(value) is origin and (args[-1] is Any or every(value))
    return lambda value: True


@functools.cache
def _field_checkers(cls: type) -> dict[str, tuple[Any, Callable[[Any], bool]]]:
    return {name: (hint, _checker(hint)) for name, hint in typing.get_type_hints(cls).items()}


def _wrong_field(cls: type, data: dict[str, Any]) -> tuple[str, Any] | None:
    """The first field of `data` that does not fit `cls` (a nested one named by its path, `requests.sent`) and
    its annotation; None when every field fits."""
    fields = _field_checkers(cls)
    for name, value in data.items():
        if name not in fields:
            continue  # a field this ragbench does not know (a newer writer's): ignored
        hint, conforms = fields[name]
        if conforms(value):
            continue
        nested = [a for a in (hint, *typing.get_args(hint)) if dataclasses.is_dataclass(a)]
        if nested and type(value) is dict:
            inner = _wrong_field(typing.cast(type, nested[0]), value)
            if inner is not None:
                return f"{name}.{inner[0]}", inner[1]
        return name, hint
    return None


def _converter(hint: Any) -> Callable[[Any], Any] | None:
    """How a checked JSON value becomes the field's value (None: as it is): null is NaN in a float field, a string
    the member of an enum, an object the nested block's dataclass."""
    if hint is float:
        return lambda value: float("nan") if value is None else value
    if _is_enum(hint):
        return lambda value: hint(value)
    if (known := open_enum(hint)) is not None:  # any string; a member where it names one
        members = {member.value: member for member in known}
        return lambda value: members.get(value, value)
    if dataclasses.is_dataclass(hint):
        return lambda value: _build(typing.cast(type, hint), value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: null stays null
        inner = [c for c in map(_nested_converter, args) if c is not None]
        return (lambda value: None if value is None else inner[0](value)) if len(inner) == 1 else None
    if origin is list and (item := _nested_converter(args[0])) is not None:
        return lambda value: [item(v) for v in value]
    if origin is dict and (entry := _nested_converter(args[1])) is not None:
        return lambda value: {k: entry(v) for k, v in value.items()}
    return None


def _nested_converter(hint: Any) -> Callable[[Any], Any] | None:
    """Inside a list, a dict or beside None, only blocks and enums are converted: there null is no value, not NaN."""
    return _converter(hint) if hint is not float else None


@functools.cache
def _converters(cls: type) -> dict[str, Callable[[Any], Any]]:
    found = {name: _converter(hint) for name, hint in typing.get_type_hints(cls).items()}
    return {name: convert for name, convert in found.items() if convert is not None}


def _build(cls: type, data: dict[str, Any]) -> Any:
    """An instance of `cls` from checked JSON, nested blocks included; unknown fields are dropped."""
    converters = _converters(cls)
    known = _field_checkers(cls)
    values = {k: converters[k](v) if k in converters else v for k, v in data.items() if k in known}
    return cls(**values)


def typed_record(cls: type, data: dict[str, Any], path: Path, number: int) -> object:
    """The record of a line, every field checked against the schema's types: a hand-edited or foreign file
    gets one line that names the field, never a traceback later."""
    wrong = _wrong_field(cls, data)
    if wrong is not None:
        name, hint = wrong
        raise InputError(
            path,
            f"{data['record']} record: field {name!r} has the wrong type "
            f"(expected {getattr(hint, '__name__', None) or hint})",
            number,
        )
    try:
        return _build(cls, data)
    except TypeError as exc:
        raise InputError(path, f"{data['record']} record: {exc}", number) from None
