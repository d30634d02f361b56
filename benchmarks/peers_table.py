"""The tables of docs/peers.md, built from the measured rows (pure; tests/benchmarks/test_peers_table.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

BEGIN = "<!-- peers:measured:begin -->"
END = "<!-- peers:measured:end -->"


@dataclass(frozen=True)
class Row:
    """One measured figure set: the cells under the table's header, the load average over the run, the command."""

    cells: tuple[str, ...]
    load: str
    command: str


def figure(value: float | None, digits: int = 0, unit: str = "") -> str:
    """A figure for a cell: thousands separated, `—` where the tool reported none."""
    if value is None:
        return "—"
    return f"{value:,.{digits}f}{unit}"


def signed_share(value: float | None) -> str:
    """A relative error as a signed percentage; `no answer` where there is none."""
    return "no answer" if value is None else f"{value:+.1%}"


def markdown_table(header: tuple[str, ...], rows: list[Row]) -> str:
    """A markdown table: the header's columns, then load average and the command (in code, pipes escaped)."""
    columns = (*header, "load avg", "command")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        if len(row.cells) != len(header):
            raise ValueError(f"row of {len(row.cells)} cells under a header of {len(header)}")
        command = "`" + row.command.replace("|", "\\|").replace("`", "'") + "`"
        lines.append("| " + " | ".join((*row.cells, row.load, command)) + " |")
    return "\n".join(lines)


def replace_measured(page: str, measured: str) -> str:
    """The page with what lies between its BEGIN and END markers replaced by `measured` (the markers kept)."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(page):
        raise ValueError(f"the page has no {BEGIN} ... {END} section")
    return pattern.sub(lambda _: f"{BEGIN}\n{measured.strip()}\n{END}", page, count=1)
