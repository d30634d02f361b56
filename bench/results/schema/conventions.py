"""How the results file writes a field: every field always, but those marked written only when set; and which
fields take any string, the known ones typed."""

import enum
import types
import typing
from typing import Any

# A field added after version 2 that the writer leaves out while it holds its default (None, [], {} or False), so that
# a file which does not use it reads and writes back unchanged (tests/results/v2); the schema does not
# require it.
WRITTEN_WHEN_SET = {"written_when_set": True}

# A field's description in docs/results.schema.json is its trailing comment, or else the `#:` lines right above it
# (bench/results/json_schema.py); a plain `#` line above fields heads a group and describes none of them.


def open_enum(hint: Any) -> type[enum.Enum] | None:
    """The enum of a `SomeEnum | str` field (None for any other annotation): the file may hold any string (a newer
    ragbench's value), read as the enum's member where it names one, else as the string."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) not in (typing.Union, types.UnionType) or len(args) != 2 or str not in args:
        return None
    other = args[0] if args[1] is str else args[1]
    return other if isinstance(other, type) and issubclass(other, enum.Enum) else None
