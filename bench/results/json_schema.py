"""The JSON Schema of one results.jsonl line, generated from the record dataclasses of bench.results.schema.

    python -m bench.results.json_schema docs/results.schema.json   # rewrite the committed copy

A small generator rather than pydantic's TypeAdapter: it knows the writer's conventions (a float that is
not finite is written as null; every field is written, defaults included, but those written only when set;
`record` and `schema` are constants, `version` one of DESCRIBED_VERSIONS) and takes each field's description
from its comment in the schema, with no dependency beyond the standard library. tests/report/test_schema.py fails
when the committed copy is stale.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, TypedDict

from bench.core import machine, resample
from bench.results import provenance, schema
from bench.results.schema import (
    RECORD_TYPES,
    SCHEMA,
    VERSION,
    doctor,
    grow,
    identity,
    ingest,
    interleave,
    load,
    quality,
    run,
    sizing,
)
from bench.results.schema.conventions import open_enum

# A JSON Schema node, as far as this generator writes one (draft 2020-12 keywords; `$`-names need this syntax).
SchemaNode = TypedDict(
    "SchemaNode",
    {
        "$schema": str,
        "$id": str,
        "$ref": str,
        "$defs": "dict[str, SchemaNode]",
        "type": "str | list[str]",
        "enum": "list[str] | list[int]",
        "const": "str | None",
        "items": "SchemaNode",
        "additionalProperties": "SchemaNode | bool",
        "anyOf": "list[SchemaNode]",
        "oneOf": "list[SchemaNode]",
        "title": str,
        "description": str,
        "properties": "dict[str, SchemaNode]",
        "required": list[str],
    },
    total=False,
)

# The modules of the schema, in the order its blocks are listed.
_SCHEMA_MODULES = (run, quality, identity, doctor, load, interleave, sizing, ingest, grow)

_SIMPLE: dict[object, SchemaNode] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    float: {"type": ["number", "null"]},
}  # null: NaN, i.e. no value (JSON has no NaN)
# The versions whose lines this schema describes: a version 2 line is a version 3 line without the header's labels
# and provenance, each written only when set.
DESCRIBED_VERSIONS = (2, VERSION)
_FIELD = re.compile(r"^\s+(\w+):[^#]*(?:#\s*(.+))?$")
_DOC_LINE = re.compile(r"^\s+#:\s*(.+)$")


def _type(hint: Any) -> SchemaNode:
    if hint is Any:
        return {}
    if hint in _SIMPLE:
        return _SIMPLE[hint].copy()
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if typing.is_typeddict(hint):  # a wire block typed in code (keys that are a server's names): any object
        return {"type": "object", "additionalProperties": {}}  # as an untyped dict is described
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):  # a nested block: once under $defs, by its name
        return {"$ref": f"#/$defs/{hint.__name__}"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if open_enum(hint) is not None:  # any string: the enum names those this ragbench knows
            return _type(str)
        options = [_type(a) for a in args]
        kinds = [o["type"] for o in options if set(o) == {"type"}]
        if len(kinds) == len(options):  # plain types only: one "type" list
            flat = list(dict.fromkeys(k for kind in kinds for k in (kind if isinstance(kind, list) else [kind])))
            return {"type": flat}
        return {"anyOf": options}
    if origin is list:
        return {"type": "array", "items": _type(args[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type(args[1])}
    raise TypeError(f"no JSON Schema for {hint!r}")


def _comments(cls: type) -> dict[str, str]:
    """Each field's comment in the schema, its description: the trailing one, or else the `#:` lines right above the
    field (Sphinx's form for attribute docs; a description too long for one line goes there). A plain `#` line
    above a field heads a group of fields and describes none of them."""
    found: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        comment = _DOC_LINE.match(line)
        if comment:
            above.append(comment.group(1).strip())
            continue
        match = _FIELD.match(line)
        if match and (match.group(2) or above):
            found[match.group(1)] = match.group(2).strip() if match.group(2) else " ".join(above)
        above = []
    return found


def _record(kind: str | None, cls: type) -> SchemaNode:
    hints = typing.get_type_hints(cls)
    comments = _comments(cls)
    fixed: dict[str, SchemaNode] = {
        "record": {"const": kind},
        "schema": {"const": SCHEMA},
        "version": {"enum": list(DESCRIBED_VERSIONS)},
    }
    constants: dict[str, SchemaNode] = fixed if kind else {}
    properties: dict[str, SchemaNode] = {}
    for field in dataclasses.fields(cls):
        prop = constants[field.name].copy() if field.name in constants else _type(hints[field.name])
        if field.name in comments:
            prop["description"] = comments[field.name]
        properties[field.name] = prop
    node: SchemaNode = {"type": "object", "title": cls.__name__}
    if kind is None and _documented(cls):
        node["description"] = inspect.cleandoc(cls.__doc__ or "")
    node["properties"] = properties
    # the writer writes every field, but those written only when set (schema.WRITTEN_WHEN_SET)
    node["required"] = [f.name for f in dataclasses.fields(cls) if not f.metadata.get("written_when_set")]
    node["additionalProperties"] = False
    return node


def _documented(cls: type) -> bool:
    """A block's own docstring (a dataclass without one gets a generated signature as its __doc__)."""
    return bool(cls.__doc__) and not (cls.__doc__ or "").startswith(f"{cls.__name__}(")


def _blocks() -> dict[str, type]:
    """The nested blocks the records use, by class name: first the shared Interval, then each schema module's in
    the order it defines them."""
    records = set(RECORD_TYPES.values())
    used: set[type] = set()

    def visit(hint: Any) -> None:
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if hint not in used and hint not in records:
                used.add(hint)
                for nested in typing.get_type_hints(hint).values():
                    visit(nested)
            return
        for arg in typing.get_args(hint):
            visit(arg)

    for cls in records:
        for hint in typing.get_type_hints(cls).values():
            visit(hint)
    order = [resample.__name__, machine.__name__, provenance.__name__, *(m.__name__ for m in _SCHEMA_MODULES)]
    placed = sorted(used, key=lambda cls: (order.index(cls.__module__), inspect.getsourcelines(cls)[1]))
    return {cls.__name__: cls for cls in placed}


def results_schema() -> SchemaNode:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://ragbench.invalid/{SCHEMA}/{VERSION}/record.schema.json",
        "title": f"{SCHEMA} version {VERSION}: one line of results.jsonl",
        "description": (schema.__doc__ or "").strip(),
        "oneOf": [{"$ref": f"#/$defs/{kind}"} for kind in RECORD_TYPES],
        "$defs": {
            **{kind: _record(kind, cls) for kind, cls in RECORD_TYPES.items()},
            **{name: _record(None, cls) for name, cls in _blocks().items()},
        },
    }


def schema_text() -> str:
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):  # `--help` is no file name to write the schema to
        print("usage: python -m bench.results.json_schema OUT.json", file=sys.stderr)
        sys.exit(2)
    Path(sys.argv[1]).write_text(schema_text(), encoding="utf-8")
