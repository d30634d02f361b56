"""Command options declared once: each record field's flag, help and bounds, from which the CLI's options and a
suite file's keys are derived (bench/cli/declared.py, bench/cli/suite/keys.py). Here, in the bottom layer, so that
a lower package's record (the gate's options, bench/gate/options.py) declares its own flags.

    @dataclass
    class IdentityCommand:
        limit: int | None = field(default=None, metadata=option(Flag(("--limit",), "Use only the first N texts.")))

The field's name is the request's, the Typer parameter's and the suite key's; its type is the option's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

FLAG = "ragbench.flag"  # the key of a field's metadata that holds its Flag


@dataclass(frozen=True)
class Renamed:
    """A flag's spelling before a rename, still accepted (with its suite key) for one release."""

    old: str  # "--max-error-rate": the flag before; its suite key is the same words, max_error_rate
    bounds: str  # what the value bounds, said in the deprecation line

    @property
    def key(self) -> str:
        return self.old.lstrip("-").replace("-", "_")

    def line(self, old: str, new: str) -> str:
        """The one deprecation line, the names spelled as the caller spells them (a flag or a suite key)."""
        return f"{old} is now {new} (it bounds {self.bounds}); the old name goes in the next release"


@dataclass(frozen=True)
class Flag:
    """How a request field is given on the command line, and whether a suite entry may give it."""

    names: tuple[str, ...]  # "--endpoint", "-e"
    help: str
    min: int | None = None
    suite: bool = True  # a key of the command's suite entries (false: the suite sets it, or `ragbench run` does)
    toml: tuple[type, ...] = ()  # the suite key's TOML types where the field's type does not say them
    hidden: bool = False  # a compatibility spelling: accepted, not listed in --help
    renamed: Renamed | None = None  # the spelling before a rename: accepted for one release, with a deprecation line


def option(flag: Flag) -> dict[str, Flag]:
    """A dataclass field's metadata that makes it the option `flag` declares."""
    return {FLAG: flag}


def flag_of(field: dataclasses.Field[Any]) -> Flag | None:
    found = field.metadata.get(FLAG)
    return found if isinstance(found, Flag) else None


def declared_fields(request: type) -> list[dataclasses.Field[Any]]:
    """The request's fields that are options, in the order the command line lists them."""
    return [f for f in dataclasses.fields(request) if flag_of(f) is not None]
