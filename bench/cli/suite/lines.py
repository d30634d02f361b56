"""Where a suite file says something: the line of a key path, and how a message names that place."""

from __future__ import annotations

import re
from pathlib import Path

from bench.core.errors import InputError

Where = tuple[str | int, ...]  # ("load", 1, "batch"): a key path, an integer being an entry of an array of tables


def label(where: Where) -> str:
    """("load", 1, "batch") -> "load #2.batch": how a message names a place in the file."""
    text = ""
    for part in where:
        text += f" #{part + 1}" if isinstance(part, int) else f".{part}" if text else part
    return text


class SuiteText:
    """The suite file's text: every error it raises carries the file and the line of the key it names."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def error(self, message: str, *keys: str | int) -> InputError:
        return InputError(self.path, message, self.line_of(*keys))

    def line_of(self, *keys: str | int) -> int | None:
        """The line of the last key of a path such as ("load", 1, "batch") (an integer: that entry of an array of
        tables), each found after the line of the one before it; best effort: the deepest line found."""
        found: int | None = None
        previous = ""
        for key in keys:
            start = found or 0
            if isinstance(key, int):  # the (key+1)-th [[previous]] header, counted from the first
                header = re.compile(rf"^\s*\[\[\s*{re.escape(previous)}\s*\]\]")
                hits = [n for n in range(start, len(self.lines)) if header.search(self.lines[n])]
                if key >= len(hits):
                    break
                found = hits[key]
                continue
            pattern = re.compile(rf'^\s*(\[\[?\s*)?(?:[\w.-]+\.)?["\']?{re.escape(key)}["\']?\s*(\]|=|\.)')
            number = next((n for n in range(start, len(self.lines)) if pattern.search(self.lines[n])), None)
            if number is None:
                break
            found, previous = number, key
        return found + 1 if found is not None else None
