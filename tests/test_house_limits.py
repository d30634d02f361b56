"""The house's size limits (issue 49): no module in bench/ or benchmarks/ over 400 lines, no function (methods and
nested functions included) over 50, counted as the source spans them (ast: end_lineno - lineno + 1, its docstring
and decorators' lines within). Each offender is named, so that a failure says what to split."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
CHECKED = ("bench", "benchmarks")


def offenders(root: Path, folders: tuple[str, ...] = CHECKED) -> list[str]:
    """Every module over MAX_MODULE_LINES and every function over MAX_FUNCTION_LINES under `root`'s `folders`,
    as `path: N lines` and `path: name(): N lines`."""
    found: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            source = path.read_text(encoding="utf-8")
            if (lines := len(source.splitlines())) > MAX_MODULE_LINES:
                found.append(f"{where}: {lines} lines")
            for node in ast.walk(ast.parse(source, filename=where)):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.end_lineno is None:
                    continue
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}: {node.name}(): {length} lines")
    return found


def test_no_module_or_function_over_the_limits():
    assert offenders(REPO) == []


def _body(lines: int) -> str:
    return "".join(f"    x{i} = {i}\n" for i in range(lines))


def test_the_offenders_are_named(tmp_path: Path):
    """What the check sees: a long function, a long method, a long module, in a subfolder too; a function at the
    limit passes."""
    (tmp_path / "bench" / "load").mkdir(parents=True)
    at_limit = "def fine():\n" + _body(MAX_FUNCTION_LINES - 1)
    over = "def long():\n" + _body(MAX_FUNCTION_LINES)
    method = "class C:\n    def method(self):\n" + "".join(f"        y{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "bench" / "a.py").write_text(at_limit + over + method)
    (tmp_path / "bench" / "load" / "other.py").write_text("def measure_point():\n" + _body(MAX_FUNCTION_LINES))
    (tmp_path / "bench" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert offenders(tmp_path, ("bench",)) == [
        f"bench/a.py: long(): {MAX_FUNCTION_LINES + 1} lines",
        f"bench/a.py: method(): {MAX_FUNCTION_LINES + 1} lines",
        f"bench/big.py: {MAX_MODULE_LINES + 1} lines",
        f"bench/load/other.py: measure_point(): {MAX_FUNCTION_LINES + 1} lines",
    ]
