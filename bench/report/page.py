"""Building blocks every kind of report shares: tables in markdown and HTML, figures, the HTML page."""

from __future__ import annotations

import base64
import os
import re
from html import escape
from pathlib import Path

from bench.core.secrets import mask

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f0f0f0} tr:nth-child(even) td{background:#fafafa}
img{max-width:100%} pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.8em}
.bad{color:#b00020;font-weight:bold}
"""

Rows = tuple[list[str], list[list[str]]]  # a header and its rows, rendered by md_table or html_table


def md_table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *[line(r) for r in rows]])


def html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def inline(text: str) -> str:
    """The tiny markdown subset used in shared lines, as HTML: **bold** and `code`."""
    html = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(text))
    return re.sub(r"`(.+?)`", r"<code>\1</code>", html)


def md_figure(title: str, path: Path, out_dir: Path) -> str:
    return f"![{title}]({os.path.relpath(path, out_dir)})"


def html_figure(title: str, path: Path) -> str:
    """A plot, embedded by html_page as base64 PNG: the page needs no other file and no network."""
    return (
        f'<figure><img alt="{escape(title)}" '
        f'src="data:image/png;base64,{_PLOT.format(path)}"><figcaption>{escape(title)}</figcaption></figure>'
    )


_PLOT = "<!--plot {}-->"  # stands for a plot's bytes while the text is masked (masking could change base64)


def html_page(title: str, body: str) -> str:
    """The whole page: secrets masked in its text, then each plot's bytes put in."""
    page = mask(
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )
    return re.sub(r"<!--plot (.+?)-->", lambda m: base64.b64encode(Path(m.group(1)).read_bytes()).decode("ascii"), page)
