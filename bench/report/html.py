"""report.html: self-contained (inline CSS, plots embedded as base64 PNG), no network needed to view."""

from __future__ import annotations

import base64
import json
import re
from html import escape
from pathlib import Path

from bench.report.markdown import dataset_lines, notes_lines, status_line, target_line
from bench.report.tables import LATENCY_NOTE, comparison_rows, cost_rows, summary_rows
from bench.results.store import Results
from bench.secrets import mask

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f0f0f0} tr:nth-child(even) td{background:#fafafa}
img{max-width:100%} pre{background:#f6f6f6;padding:.6em;overflow:auto;font-size:.8em}
.bad{color:#b00020;font-weight:bold}
"""


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _inline(text: str) -> str:
    """The tiny markdown subset used in shared lines: **bold** and `code`."""
    html = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escape(text))
    return re.sub(r"`(.+?)`", r"<code>\1</code>", html)


def render_html(results: Results, plots: list[tuple[str, Path]]) -> str:
    h = results.header
    body = [
        "<h1>ragbench quality report</h1>",
        f"<p>Created {escape(h.created)} by ragbench {escape(h.ragbench_version)}; depth {h.depth}; seed {h.seed}.</p>",
        *[f"<p>{_inline(line)}</p>" for line in dataset_lines(results)],
        f"<p class=\"{'bad' if results.end is None or results.end.status != 'complete' else ''}\">{_inline(status_line(results))}</p>",
        *[f"<p class=\"bad\">{_inline(line)}</p>" for line in notes_lines(results)],
        "<h2>Results</h2>",
        "<p>Mean over every judged query (a failed or empty query scores 0, as trec_eval -c), with its 95% bootstrap interval.</p>",
        _table(*summary_rows(results)),
        f"<p>{escape(LATENCY_NOTE)}</p>",
    ]
    images = {}
    for title, path in plots:  # masking runs on the text only: a placeholder stands for each image
        placeholder = f"<!--plot {len(images)}-->"
        images[placeholder] = base64.b64encode(path.read_bytes()).decode("ascii")
        body.append(f"<figure><img alt=\"{escape(title)}\" src=\"data:image/png;base64,{placeholder}\"><figcaption>{escape(title)}</figcaption></figure>")
    if results.comparisons:
        body += ["<h2>Paired significance</h2>",
                 f"<p>Randomization test ({results.comparisons[0].permutations} sign flips) and paired t-test; Holm correction "
                 "across the pairs of each measure; verdict at 0.05 on the Holm-corrected randomization p-value.</p>",
                 _table(*comparison_rows(results))]
    body += ["<h2>Cost and anomalies</h2>", _table(*cost_rows(results)), "<h2>Target configuration</h2>"]
    for t in results.targets:
        body.append(f"<h3>{escape(t.name)}</h3><p>{_inline(target_line(t))}</p>"
                    f"<pre>{escape(json.dumps(t.config, indent=2, sort_keys=True))}</pre>")
    html = mask(f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ragbench quality report</title>"
                f"<style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n")
    for placeholder, data in images.items():
        html = html.replace(placeholder, data)
    return html
