"""How the gate reads a figure from a record and prints it in a message or a table."""

from __future__ import annotations

import math
from typing import Any


def as_number(value: Any) -> float | None:
    """A figure from a record, or None where it is absent or not a finite number (hand-edited files)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def figure_text(value: Any) -> str:
    """A figure as the results file holds it, for a message: `null` where it is null (the reader reads a null
    figure back as NaN, and JSON has no NaN: the writer writes one as null)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    return repr(value)


def fmt_num(value: float | None, digits: int = 1) -> str:
    """A figure with `digits` decimals; a dash where a run has none."""
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_general(value: float | None) -> str:
    """A figure in its shortest form (`:g`); a dash where a run has none."""
    return "–" if value is None else f"{value:g}"


def fmt_change(value: float | None) -> str:
    """A relative change as a signed percentage; a dash where there is none."""
    return "–" if value is None else f"{value:+.1%}"
