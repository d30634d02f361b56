"""The sections of a suite file and the keys each takes, with their TOML types. A command's entry keys are its
request's options (bench/commands/options.py): declared there once, never listed again here."""

from __future__ import annotations

import typing
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

from bench.commands.identity import IdentityCommand
from bench.commands.load_request import LoadRequest
from bench.commands.options import declared_fields, flag_of
from bench.commands.quality import QualityRequest
from bench.core.flags import Renamed

TomlTypes = type | tuple[type, ...]  # what a key's value may be in TOML (a path is a string)
# A value as tomllib reads it, and a table of them (dates are no suite value: `typed` refuses them by type).
TomlValue: typing.TypeAlias = "str | int | float | bool | list[TomlValue] | dict[str, TomlValue]"
TomlTable: typing.TypeAlias = "dict[str, TomlValue]"
# An entry's values as its command's request takes them: list flags joined (1,8,32), paths beside the file resolved.
EntryValues: typing.TypeAlias = "dict[str, TomlValue | Path]"


# A value that `ValueReader.typed` checked against its key's types, as the type it was checked to be (a key
# not given: None, or empty).
def as_text(value: TomlValue | Path | None) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: TomlValue | Path | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_table(value: TomlValue | Path | None) -> TomlTable:
    return value if isinstance(value, dict) else {}


def as_list(value: TomlValue | Path | None) -> list[TomlValue]:
    return value if isinstance(value, list) else []


SECTIONS = ("suite", "gate", "datasets", "targets", "endpoints", "quality", "identity", "load")
DATASET_KEYS: dict[str, TomlTypes] = {"path": str, "split": str, "max_queries": int, "max_docs": int}

# A list flag of `ragbench load`, written 1,8,32 on its command line: a list, a string or a number here.
LIST_FLAGS: dict[str, TomlTypes] = {
    "batch": (list, str, int),
    "concurrency": (list, str, int),
    "rate": (list, str, int, float),
    "lengths": (list, str, int),
    "documents": (list, str, int),
}
PATH_KEYS = ("texts", "tokenizer", "embedding_model", "cross_encoder", "background_from")  # beside the suite file
_TOML_TYPES: dict[Any, TomlTypes] = {str: str, Path: str, int: int, float: (float, int), list: list, bool: bool}


def _toml_types(name: str, hint: Any) -> TomlTypes:
    """A field's TOML types: a path is a string, a number may be written as an integer."""
    kind = next(t for t in typing.get_args(hint) if t is not NoneType) if isinstance(hint, UnionType) else hint
    return LIST_FLAGS.get(name) or _TOML_TYPES[typing.get_origin(kind) or kind]


def declared_keys(request: type) -> dict[str, TomlTypes]:
    """The request's options that a suite entry may give, as keys with their TOML types."""
    hints = typing.get_type_hints(request)
    keys = {}
    for field in declared_fields(request):
        flag = flag_of(field)
        if flag is not None and flag.suite:
            keys[field.name] = flag.toml or _toml_types(field.name, hints[field.name])
    return keys


def renamed_keys(request: type) -> dict[str, tuple[str, Renamed]]:
    """The old key of each renamed option a suite entry may give -> its key now and the rename."""
    found = {}
    for field in declared_fields(request):
        flag = flag_of(field)
        if flag is not None and flag.suite and flag.renamed is not None:
            found[flag.renamed.key] = (field.name, flag.renamed)
    return found


# `name` names the entry's folder under --out; `out`, `overwrite` and `origin` (labels: the suite's own) come from
# `ragbench run`; `ray` is not a suite's (its jobs run where the suite runs).
QUALITY_KEYS: dict[str, TomlTypes] = {"name": str, **declared_keys(QualityRequest)}
IDENTITY_KEYS: dict[str, TomlTypes] = {"name": str, **declared_keys(IdentityCommand)}
LOAD_KEYS: dict[str, TomlTypes] = {"name": str, **declared_keys(LoadRequest)}
# Each entry kind's renamed keys (old -> new): accepted for one release, with a deprecation line.
RENAMED_KEYS = {
    "quality": renamed_keys(QualityRequest),
    "identity": renamed_keys(IdentityCommand),
    "load": renamed_keys(LoadRequest),
}
