"""How `quality --background` names a target's run at a background rate: `NAME@bgRATE` (rate 0: idle). One
definition, for the command that runs them and the report that lines them up."""

from __future__ import annotations

import re

_LOADED = re.compile(r"^(?P<name>.+)@bg(?P<rate>[0-9.e+-]+)$")


def loaded_name(name: str, rate: float) -> str:
    return f"{name}@bg{rate:g}"


def split_loaded_name(name: str) -> tuple[str, float] | None:
    """`NAME@bg200` -> ("NAME", 200.0); None for a target not run under `--background`."""
    match = _LOADED.match(name)
    if match is None:
        return None
    try:
        return match["name"], float(match["rate"])
    except ValueError:
        return None
