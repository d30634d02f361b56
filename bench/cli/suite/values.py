"""A suite file's values: their TOML types, `${VAR}` from the environment, paths beside the file, spec strings
and the names that entries use for them."""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from bench.cli.suite.keys import TomlTable, TomlTypes
from bench.cli.suite.lines import SuiteText, Where, label
from bench.cli.suite.secrets import refuse_credentials, refuse_secret_key
from bench.core.errors import UserError
from bench.core.flags import Renamed
from bench.core.spec_grammar import NAME
from bench.datasets import BUILTIN_PREFIX

S = TypeVar("S")


@dataclass
class Named(Generic[S]):
    """A suite's [targets] or [endpoints]: NAME -> `NAME=SPEC` (what a request carries), and each such text's
    spec as parsed when the file was read (what the entries' checks take, never parsing it again)."""

    texts: dict[str, str] = field(default_factory=dict)
    parsed: dict[str, S] = field(default_factory=dict)


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TYPE_NAMES = {int: "integer", float: "number", str: "string", list: "list", dict: "table", bool: "true/false"}


class ValueReader(SuiteText):
    """Each value read as its key allows, with the suite file's line numbers in every message."""

    def typed(self, table: TomlTable, allowed: dict[str, TomlTypes], where: Where) -> TomlTable:
        for key, value in table.items():
            refuse_secret_key(self, key, where)
            if key not in allowed:
                raise self.error(f"{label(where)}: unknown key {key!r} (known: {', '.join(allowed)})", *where, key)
            types = allowed[key]
            kinds = types if isinstance(types, tuple) else (types,)
            if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
                names = " or ".join(_TYPE_NAMES[k] for k in kinds)
                raise self.error(f"{label((*where, key))}: expected {names}, got {type(value).__name__}", *where, key)
            if isinstance(value, list) and not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
            ):
                raise self.error(f"{label((*where, key))}: expected a list of strings or numbers", *where, key)
        return table

    def renamed(self, table: TomlTable, renames: dict[str, tuple[str, Renamed]], where: Where) -> TomlTable:
        """The table with each renamed key's old spelling taken as its new one, and one deprecation line on stderr
        for each (both spellings at once: an error)."""
        import typer

        found = dict(table)
        for old, (new, renamed) in renames.items():
            if old not in found:
                continue
            line = self.line_of(*where, old)
            at = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
            typer.echo(at + renamed.line(label((*where, old)), label((*where, new))), err=True)
            if new in found:
                raise self.error(f"{label(where)}: give {new} or {old}, not both ({old} is its old name)", *where, old)
            found[new] = found.pop(old)
        return found

    def expand(self, value: str, *where: str | int) -> str:
        """`${VAR}` -> the environment's VAR."""

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise self.error(f"{label(where)}: environment variable {name} is not set", *where)
            return os.environ[name]

        return _VAR.sub(lookup, value)

    def spec(self, value: object, parse: Callable[[list[str]], list[S]], *where: str) -> tuple[str, S]:
        """`NAME=SPEC` and its typed spec, parsed once by the commands' face (bench/commands/specs.py)."""
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"{label(where)}: expected a spec string", *where)
        refuse_credentials(self, value, where)
        text = f"{where[-1]}={self.expand(value, *where)}"
        try:
            return text, parse([text])[0]
        except UserError as exc:
            raise self.error(f"{label(where)}: {exc}", *where) from None

    def names(self, table: object, section: str, parse: Callable[[list[str]], list[S]]) -> Named[S]:
        """NAME -> NAME=SPEC and each spec's typed value, which the entries' checks take as parsed."""
        if not isinstance(table, dict):
            raise self.error(f'[{section}] must be a table of NAME = "spec"', section)
        named: Named[S] = Named()
        for name, value in table.items():
            if not NAME.fullmatch(name):
                raise self.error(f"{section}.{name}: a name may hold only letters, digits, _ . -", section, name)
            text, spec = self.spec(value, parse, section, name)
            named.texts[name] = text
            named.parsed[text] = spec
        return named

    def pick(self, wanted: object, known: dict[str, str], where: Where, what: str) -> list[str]:
        chosen = list(known) if wanted is None else typing.cast(list[str], wanted)
        for name in chosen:
            if name not in known:
                raise self.error(
                    f"{label(where)}: unknown {what} {name!r} (defined: {', '.join(known) or 'none'})", *where
                )
        if not chosen:
            raise self.error(f"{label(where)}: no {what}s", *where)
        return [known[name] for name in chosen]

    def file(self, value: str, base: Path, *where: str | int) -> Path:
        """A path, relative to the suite file's folder; it must exist (found now, not after the earlier jobs ran)."""
        text = self.expand(value, *where)
        if text.startswith(BUILTIN_PREFIX):  # a data set ragbench builds, not a path beside the suite file
            return Path(text)
        path = Path(text)
        path = path if path.is_absolute() else base / path
        if not path.exists():
            raise self.error(f"{label(where)}: {path}: no such file or folder", *where)
        return path
