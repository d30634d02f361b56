"""The grammar that target specs and endpoint specs share: `?key=value&key=value` options and the
words a boolean option accepts. One definition, so that `rerank=on` and `normalize=on` mean the same."""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

from bench.core.errors import UserError

BOOLEAN_WORDS = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
}
BOOLEAN_HELP = "true/false, yes/no, on/off or 1/0"

# NAME in NAME=SPEC (targets, endpoints, a suite's tables): what results, reports and `compare` call a system;
# none of the characters that separate a spec's parts.
NAME = re.compile(r"[A-Za-z0-9_.-]+")


def parse_options(query: str, where: str) -> dict[str, str]:
    """`a=1&b=x` -> {"a": "1", "b": "x"} (percent-escapes decoded); a pair without `=`, an empty name, a name
    that is not printable (a decoded `%0A`: it would break the one-line error that names it) or a name given twice
    is a UserError that starts with `where`."""
    options: dict[str, str] = {}
    for pair in query.split("&") if query else []:
        name, sep, value = pair.partition("=")
        name, value = unquote_plus(name), unquote_plus(value)
        if not sep or not name:
            raise UserError(f"{where}: option {pair!r} is not option=value")
        if not name.isprintable():
            raise UserError(f"{where}: option name {name!r} is not printable")
        if name in options:
            raise UserError(f"{where}: option {name!r} given twice")
        options[name] = value
    return options


def parse_bool(raw: str) -> bool:
    """A boolean option's value; ValueError for any other word."""
    try:
        return BOOLEAN_WORDS[raw.strip().lower()]
    except KeyError:
        raise ValueError(f"{raw!r} is not a boolean ({BOOLEAN_HELP})") from None
