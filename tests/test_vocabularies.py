"""Closed vocabularies are compared as enums (issue 49): no `==`, `!=` or `in (...)` of a string literal against an
attribute whose declared type is one of bench's enums, outside that enum's own module.

An attribute's type is read from bench's dataclasses and TypedDicts (their fields annotated `SomeEnum`,
`SomeEnum | None` or `SomeEnum | str`); a comparison is flagged where its attribute has that field's name (or is
its `.value`) and the literal is a member's value of that enum, so `r.kind == "openwebui"` is found while
`response.status == 200` or `r.kind == "other"` are not."""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import pkgutil
import sys
import types
import typing
from pathlib import Path

import bench
from tests.paths import REPO


def _modules() -> list[types.ModuleType]:
    found = []
    for info in pkgutil.walk_packages(bench.__path__, "bench."):
        if info.name.endswith("__main__"):
            continue
        try:
            found.append(importlib.import_module(info.name))
        except Exception:  # a module that needs what this machine lacks (an optional extra): its fields go unread
            continue
    return found


def _enums_of(hint: object) -> list[type[enum.Enum]]:
    parts = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return [p for p in parts if isinstance(p, type) and issubclass(p, enum.Enum) and p.__module__.startswith("bench")]


def typed_attributes() -> dict[str, list[type[enum.Enum]]]:
    """Field name -> the bench enums some dataclass or TypedDict of bench declares it as."""
    found: dict[str, list[type[enum.Enum]]] = {}
    for module in _modules():
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not (dataclasses.is_dataclass(cls) or typing.is_typeddict(cls)):
                continue
            try:
                hints = typing.get_type_hints(cls)
            except Exception:  # an annotation naming a type only TYPE_CHECKING imports
                continue
            for name, hint in hints.items():
                for kind in _enums_of(hint):
                    if kind not in found.setdefault(name, []):
                        found[name].append(kind)
    return found


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _attribute(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(node.value, ast.Attribute):
        return node.value.attr  # `status.value != "ok"`
    return node.attr if isinstance(node, ast.Attribute) else None


def string_comparisons(root: Path, folders: tuple[str, ...] = ("bench",)) -> list[str]:
    """`path:line: attr == 'value' (Enum)` for each literal comparison against an enum-typed attribute."""
    typed = typed_attributes()
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=where)):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                for a, b in ((x, y) for x in sides for y in sides if x is not y):
                    name = _attribute(a)
                    for kind in typed.get(name or "", []):
                        members = {m.value for m in kind}
                        hits = [v for v in _literals(b) if v in members]
                        own = sys.modules[kind.__module__].__file__ == str(path)
                        if hits and not own:
                            found.append(f"{where}:{node.lineno}: {name} == {hits[0]!r} ({kind.__name__})")
    return sorted(set(found))


def test_no_string_comparison_against_a_closed_vocabulary() -> None:
    assert string_comparisons(REPO) == []


def test_a_literal_comparison_is_found(tmp_path: Path) -> None:
    """What the check sees: `==`, `!=`, `in (...)` and `.value` against an enum field's value; not a value the enum
    lacks, nor an attribute no record types as an enum."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text(
        'if r.kind == "openwebui": pass\n'
        'if rung.status.value != "ok": pass\n'
        'if p.unit in ("docs", "x"): pass\n'
        'if r.kind == "not-a-kind": pass\n'
        'if response.reason_phrase == "ok": pass\n'
    )
    found = string_comparisons(tmp_path)
    assert {f.split(":")[1] for f in found} == {"1", "2", "3"}
    assert "bench/a.py:2: status == 'ok' (RungStatus)" in found
