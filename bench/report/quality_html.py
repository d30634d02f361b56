"""The quality part of report.html (bench.report.page.html_page makes the self-contained page)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from bench.report.labels import labels_sentence
from bench.report.page import html_figure
from bench.report.page import html_table as _table
from bench.report.page import inline as _inline
from bench.report.quality_answer import answer_heading, answer_lines
from bench.report.quality_frontier import RERANK_GAIN_NOTE, frontier_note, frontier_rows, rerank_gain_rows
from bench.report.quality_markdown import (
    COMPLETE,
    dataset_lines,
    notes_lines,
    served_cost_tables,
    status_line,
    target_line,
)
from bench.report.quality_tables import LATENCY_NOTE, comparison_rows, cost_rows, summary_rows
from bench.results.store import Results


def render_html(results: Results, plots: list[tuple[str, Path]], under_load: str = "") -> str:
    """The body of the quality report: the answer first (the results table, `under_load`'s loaded-vs-idle tables,
    the paired verdicts), then the plots and tables they rest on."""
    h = results.header
    status = status_line(results)
    body = [
        "<h1>ragbench quality report</h1>",
        *_answer_html(results),
        f"<p>Created {escape(h.created)} by ragbench {escape(h.ragbench_version)}; depth {h.depth}; seed {h.seed}."
        f"{escape(labels_sentence(h))}</p>",
        *[f"<p>{_inline(line)}</p>" for line in dataset_lines(results)],
        f'<p class="{"" if status == COMPLETE else "bad"}">{_inline(status)}</p>',
        *[f'<p class="bad">{_inline(line)}</p>' for line in notes_lines(results)],
        "<h2>Results</h2>",
        "<p>Mean over every judged query (a failed or empty query scores 0, as trec_eval -c), "
        "with its 95% bootstrap interval.</p>",
        _table(*summary_rows(results)),
        f"<p>{escape(LATENCY_NOTE)}</p>",
        under_load,
    ]
    if results.comparisons:
        body += [
            "<h2>Paired significance</h2>",
            f"<p>Randomization test ({results.comparisons[0].permutations} sign flips) and paired t-test; "
            "Holm correction across the pairs tested of each measure (under --background: each loaded run against "
            "its idle run, and the targets at idle); "
            "verdict at 0.05 on the Holm-corrected randomization p-value. The interval is each pair's own "
            "95% bootstrap interval, unadjusted: one that excludes 0 beside a Holm verdict of no difference "
            "is said in the verdict.</p>",
            _table(*comparison_rows(results)),
        ]
    body += [html_figure(title, path) for title, path in plots]
    body += [
        "<h2>What each quality point costs</h2>",
        _table(*frontier_rows(results)),
        f"<p>{escape(frontier_note(results))}</p>",
    ]
    for title, note, (table_header, table_rows) in served_cost_tables(results):
        body += [f"<h2>{escape(title)}</h2>", f"<p>{_inline(note)}</p>", _table(table_header, table_rows)]
    header, rows = rerank_gain_rows(results)
    if rows:
        body += ["<h2>Reranker gain</h2>", f"<p>{escape(RERANK_GAIN_NOTE)}</p>", _table(header, rows)]
    body += ["<h2>Cost and anomalies</h2>", _table(*cost_rows(results)), "<h2>Target configuration</h2>"]
    for t in results.targets:
        body.append(
            f"<h3>{escape(t.name)}</h3><p>{_inline(target_line(t))}</p>"
            f"<pre>{escape(json.dumps(t.config, indent=2, sort_keys=True, ensure_ascii=False))}</pre>"
        )
    return "".join(body)


def _answer_html(results: Results) -> list[str]:
    """The answer first (quality_answer): its heading and one item per line."""
    lines = answer_lines(results)
    if not lines:
        return []
    items = "".join(f"<li><strong>{escape(line)}</strong></li>" for line in lines)
    return [f"<p>{escape(answer_heading(results))}:</p><ul>{items}</ul>"]
