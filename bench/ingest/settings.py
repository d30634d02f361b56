"""`--setting NAME=V1,V2,...` given on the command line, and the grid of combinations they span."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from bench.core.errors import UserError
from bench.results.schema.ingest import Settings, SettingValue

_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_SECRET = re.compile(r"KEY|SECRET|TOKEN|PASSWORD")
MAX_COMBINATIONS = 64  # a sweep beyond this is a typo more often than a plan


@dataclass(frozen=True)
class SettingAxis:
    """One swept setting: its server name and the values to try, as given (typed by the server's own value)."""

    name: str
    values: tuple[str, ...]


def parse_settings(given: list[str]) -> list[SettingAxis]:
    """`NAME=V1,V2` per item; a name given twice, an empty value or a malformed item is one line."""
    axes: list[SettingAxis] = []
    for item in given:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not _NAME.fullmatch(name):
            raise UserError(f"--setting {item!r}: expected NAME=VALUE[,VALUE...], e.g. RAG_EMBEDDING_BATCH_SIZE=1,32")
        if _SECRET.search(name):
            raise UserError(f"--setting {name}: a key or password is not swept (it would land in the results)")
        parts = tuple(v.strip() for v in values.split(","))
        if not all(parts):
            raise UserError(f"--setting {item!r}: an empty value")
        if len(set(parts)) != len(parts):
            raise UserError(f"--setting {item!r}: a value given twice")
        if any(a.name == name for a in axes):
            raise UserError(f"--setting {name}: given twice (give its values comma-separated once)")
        axes.append(SettingAxis(name, parts))
    count = 1
    for axis in axes:
        count *= len(axis.values)
    if count > MAX_COMBINATIONS:
        raise UserError(f"--setting: {count} combinations (more than {MAX_COMBINATIONS}): sweep fewer values")
    return axes


def typed_value(name: str, text: str, current: object) -> SettingValue:
    """`text` as the type of the server's `current` value of the setting (int, float, bool or str)."""
    if isinstance(current, bool):
        if text.lower() in ("true", "1", "on", "yes"):
            return True
        if text.lower() in ("false", "0", "off", "no"):
            return False
        raise UserError(f"--setting {name}={text}: expected true or false (the server's value is a boolean)")
    if isinstance(current, int):
        try:
            value = int(text)
        except ValueError:
            raise UserError(f"--setting {name}={text}: expected a whole number (the server's value is one)") from None
        if value < 0:
            raise UserError(f"--setting {name}={text}: must be 0 or more")
        return value
    if isinstance(current, float):
        try:
            number = float(text)
        except ValueError:
            raise UserError(f"--setting {name}={text}: expected a number (the server's value is one)") from None
        if not math.isfinite(number):  # JSON has no NaN or infinity: the server could never be sent it
            raise UserError(f"--setting {name}={text}: expected a finite number")
        return number
    return text


def typed_axis(name: str, texts: tuple[str, ...], current: object) -> list[SettingValue]:
    """An axis's values typed as the server's `current`; two that are equal once typed (`2,02`) are one line."""
    values = [typed_value(name, text, current) for text in texts]
    for i, value in enumerate(values):
        if value in values[:i]:
            first = texts[values.index(value)]
            raise UserError(f"--setting {name}: {first} and {texts[i]} are the same value ({value!r}) once typed")
    return values


def combinations(names: list[str], values: list[list[SettingValue]]) -> list[Settings]:
    """Every combination of each named setting's values, the last varying fastest; one empty one without names."""
    return [dict(zip(names, chosen)) for chosen in itertools.product(*values)]


def label(combination: Mapping[str, object]) -> str:
    """`NAME=VALUE NAME=VALUE`, or `default` for the server's settings as they are."""
    return " ".join(f"{k}={v}" for k, v in combination.items()) or "default"
