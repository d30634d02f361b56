"""The ingest report: each target's recommended settings combination first, then one row per combination with
every figure of its `ingest_point` record, and docs/s per combination with lost documents marked."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from bench.endpoints.meter_calls import REFUSALS
from bench.report.ingest_plot import docs_per_s_plot
from bench.report.labels import labels_sentence
from bench.report.page import Rows, html_figure, html_table, inline, md_figure, md_table
from bench.results.schema import EndpointCalls, EndStatus, IngestPointRecord, IngestStatus
from bench.results.store import Results

MISSING = "–"
NOTES = (
    "Docs/s: processed documents over first upload to last processed. Busy %: share of the combination's wall time "
    "with at least one call of the route in flight. Upstream s: the endpoint's own time from its timing headers, "
    "summed (with how many calls sent one). Retries: calls repeating the body of an earlier failed call. "
    "Direct: the app's embedding calls sent again straight to the embedder; app ÷ direct is what the app leaves "
    "of the embedder's speed. Tokens per doc: the route's prompt / completion tokens over the documents sent."
)


def _num(value: float | int | None, spec: str = ".2f") -> str:
    return MISSING if value is None else format(value, spec)


def _status(point: IngestPointRecord) -> str:
    if point.status == IngestStatus.FAILED:
        return "FAILED (below)"  # its error under the table: a long line held the table wider than the page
    if point.status == IngestStatus.LOST:
        return f"LOST: {point.failed} failed, {point.lost} lost"
    return str(point.status)


def embedding_routes(points: list[IngestPointRecord]) -> list[str]:
    """Routes whose calls carried texts in some combination (embedding, reranking), in the order first met."""
    routes = dict.fromkeys(r for p in points for r in p.calls)
    return [r for r in routes if any(p.calls[r].texts for p in points if r in p.calls)]


def generation_routes(points: list[IngestPointRecord]) -> list[str]:
    """Routes whose calls carried no texts (chat completions: LightRAG's entity extraction)."""
    texts = set(embedding_routes(points))
    return [r for r in dict.fromkeys(r for p in points for r in p.calls) if r not in texts]


def _embedding_cells(calls: EndpointCalls | None) -> list[str]:
    if calls is None:
        return [MISSING] * 7
    timed = calls.calls_with_upstream_time
    upstream = MISSING if calls.upstream_seconds is None else f"{calls.upstream_seconds:.2f} ({timed} of {calls.calls})"
    return [
        str(calls.calls),
        f"{_num(calls.texts_per_call_mean, '.1f')} / {_num(calls.texts_per_call_max, 'd')}",
        "/".join(str(calls.by_status.get(kind, 0)) for kind in REFUSALS),
        str(calls.retries),
        _num(None if calls.busy_fraction is None else calls.busy_fraction * 100, ".0f"),
        str(calls.peak_in_flight),
        upstream,
    ]


def _generation_cells(calls: EndpointCalls | None, documents: int) -> list[str]:
    if calls is None:
        return [MISSING] * 2
    per_doc = (
        f"{calls.prompt_tokens / documents:.0f} / {calls.completion_tokens / documents:.0f}" if documents else MISSING
    )
    return [str(calls.calls), per_doc]


def setting_columns(points: list[IngestPointRecord]) -> tuple[list[str], list[list[str]]]:
    """The settings that vary between the combinations, and each combination's values of them: a setting every
    combination shares is said once (`shared_settings`), not repeated per row. Without any that vary, one column
    of the combinations' labels."""
    names = list(dict.fromkeys(k for p in points for k in p.settings))
    varying = [n for n in names if len({json.dumps(p.settings.get(n)) for p in points}) > 1]
    if not varying:
        return ["combination"], [[p.label] for p in points]
    return varying, [[str(p.settings[n]) if n in p.settings else MISSING for n in varying] for p in points]


def shared_settings(points: list[IngestPointRecord]) -> str:
    """`NAME=VALUE ...` of the settings every combination had alike (empty: none, or one combination only)."""
    if len(points) < 2:
        return ""
    varying = set(setting_columns(points)[0])
    first = points[0].settings
    return " ".join(f"{k}={v}" for k, v in first.items() if k not in varying and all(k in p.settings for p in points))


def combinations_table(points: list[IngestPointRecord]) -> Rows:
    """One row per combination of one target, by the settings that vary: its documents and rates; a combination
    that could not be measured shows its error only. The meter's figures are `calls_tables`' (two narrower tables
    read on a laptop's screen without scrolling sideways)."""
    names, shown = setting_columns(points)
    header = [*names, "status", "documents", "processed", "failed", "lost", "docs/s", "chunks/s", "doc p50/p99 ms"]
    header += ["direct docs/s", "app ÷ direct"]
    rows = []
    for p, settings in zip(points, shown):
        if p.status == IngestStatus.FAILED:
            rows.append([*settings, _status(p), *[MISSING] * (len(header) - len(names) - 1)])
            continue
        latency = p.doc_latency_ms
        row = [*settings, _status(p), str(p.documents), str(p.processed), str(p.failed), str(p.lost)]
        row += [_num(p.docs_per_s), _num(p.chunks_per_s, ".1f")]
        row += [f"{_num(latency.get('p50'), '.0f')} / {_num(latency.get('p99'), '.0f')}"]
        row += [_num(p.direct.docs_per_s if p.direct else None), _num(p.app_over_direct)]
        rows.append(row)
    return header, rows


def calls_tables(points: list[IngestPointRecord]) -> list[tuple[str, Rows]]:
    """Per metered route, (its name, one row per measured combination of what the meter saw on it)."""
    names, shown = setting_columns(points)
    measured = [(p, settings) for p, settings in zip(points, shown) if p.status != IngestStatus.FAILED]
    tables = []
    for route in embedding_routes(points):
        header = [*names, "calls", "texts/call mean/max", "429/413/422/5xx", "retries", "busy %", "peak in flight"]
        header.append("upstream s (calls timed)")
        rows = [[*settings, *_embedding_cells(p.calls.get(route))] for p, settings in measured]
        tables.append((route, (header, rows)))
    for route in generation_routes(points):
        header = [*names, "calls", "prompt/completion tokens per doc"]
        rows = [[*settings, *_generation_cells(p.calls.get(route), p.documents)] for p, settings in measured]
        tables.append((route, (header, rows)))
    return tables


def examples_table(points: list[IngestPointRecord]) -> Rows:
    """The documents that failed or were lost, as each record names them (its first ten)."""
    rows = [[p.label, doc, why] for p in points for doc, why in p.failed_examples.items()]
    return ["combination", "document", "why"], rows


def answer_lines(results: Results) -> list[str]:
    """Per target, its recommended combination and why, and which hop held the time (markdown); a target without
    a summary says so."""
    summaries = {s.target: s for s in results.ingest_summaries}
    lines = []
    for target in targets_of(results):
        summary = summaries.get(target)
        if summary is None:
            line = f"- **{target}**: no recommendation (the run ended before this target's sweep finished)"
        elif summary.recommended is None:
            line = f"- **{target}**: no combination recommended: {summary.reason}"
        else:
            line = f"- **{target}**: recommended `{summary.recommended}`: {summary.reason}"
        held = time_holder([p for p in results.ingest_points if p.target == target])
        lines.append(line + (f". {held}" if held else ""))
    return lines


# A route with a call in flight this share of the wall time or more holds the time; below the lower bound the
# app does (between them the two share it).
HOLDS_TIME = 0.9
APP_HOLDS_TIME = 0.5


def time_holder(points: list[IngestPointRecord]) -> str | None:
    """Which hop held the ingest's time over the measured combinations: the embedding route whose calls were in
    flight most of the wall time, or the app itself (its parsing, chunking and vector store) when none was."""
    routes = embedding_routes(points)
    busy = [
        (route, calls.busy_fraction)
        for p in points
        if p.status != IngestStatus.FAILED
        for route in routes
        if (calls := p.calls.get(route)) is not None and calls.busy_fraction is not None
    ]
    if not busy:
        return None
    top = max(busy, key=lambda rb: rb[1])[0]
    shares = [b for route, b in busy if route == top]
    span = f"{min(shares) * 100:.0f}–{max(shares) * 100:.0f}%"
    if min(shares) >= HOLDS_TIME:
        return f"The {top} hop held the time: one of its calls was in flight {span} of each combination's wall time"
    if max(shares) < APP_HOLDS_TIME:
        return f"The app held the time: {top} calls were in flight only {span} of each combination's wall time"
    return f"The app and the {top} hop shared the time: {top} calls were in flight {span} of the wall time"


def targets_of(results: Results) -> list[str]:
    found = [p.target for p in results.ingest_points] + [s.target for s in results.ingest_summaries]
    return list(dict.fromkeys(found))


def intro_line(results: Results) -> str:
    dataset = results.header.dataset_info
    parts = [f"Created {results.header.created} by ragbench {results.header.ragbench_version}"]
    if dataset.name:
        documents = MISSING if dataset.documents is None else dataset.documents
        parts.append(f"dataset {dataset.name}, {documents} documents")
    if dataset.identical_copies:
        parts.append(
            f"{dataset.identical_copies} of them repeat another's text: {dataset.distinct_texts} distinct "
            "texts were ingested, and every figure counts those"
        )
    return "; ".join(parts) + "." + labels_sentence(results.header)


def _run_status(results: Results) -> str:
    end = results.end
    if end is None:
        return "interrupted (no end record): the combinations below finished"
    return "complete" if end.status == EndStatus.COMPLETE else f"{end.status}: {end.error or MISSING}"


def _breakable(rows: Rows) -> Rows:
    """Setting names (`RAG_EMBEDDING_CONCURRENT_REQUESTS`) as column headers a browser may break after each `_`
    (a zero-width space): one word that long held the table wider than the page."""
    header, body = rows
    return [h.replace("_", "_\u200b") for h in header], body


def _target_section(target: str, points: list[IngestPointRecord]) -> tuple[list[str], list[str]]:
    """One target's tables (markdown lines, HTML parts): its combinations, what could not be measured, the calls
    per metered route, the documents failed or lost."""
    title = f"Combinations: {target}"
    md, html = [f"## {title}", ""], [f"<h2>{escape(title)}</h2>"]
    shared = shared_settings(points)
    if shared:
        md += [f"Every combination: `{shared}`.", ""]
        html.append(f"<p>Every combination: <code>{escape(shared)}</code>.</p>")
    md += [md_table(*combinations_table(points)), ""]
    html.append(html_table(*_breakable(combinations_table(points))))
    for line in [f"{p.label}: {p.error or MISSING}" for p in points if p.status == IngestStatus.FAILED]:
        md += [f"Not measured: {line}", ""]
        html.append(f"<p class='bad'>Not measured: {escape(line)}</p>")
    for route, table in calls_tables(points):
        md += [f"### Calls through the meter: {route}", "", md_table(*table), ""]
        html += [f"<h3>Calls through the meter: {escape(route)}</h3>", html_table(*_breakable(table))]
    header, rows = examples_table(points)
    if rows:
        md += ["### Documents failed or lost (first ten per combination)", "", md_table(header, rows), ""]
        html += ["<h3>Documents failed or lost (first ten per combination)</h3>", html_table(header, rows)]
    return md, html


def render(results: Results, folder: Path) -> tuple[str, str]:
    """The report's markdown and HTML body; the plot written into folder/plots."""
    status, intro, answer = _run_status(results), intro_line(results), answer_lines(results)
    md = ["# ragbench ingest report", "", intro, "", f"Status: **{status}**", "", "## Answer", "", *answer, ""]
    html = [
        "<h1>ragbench ingest report</h1>",
        f"<p>{escape(intro)}</p>",
        f"<p class='{'' if status == 'complete' else 'bad'}'>Status: {escape(status)}</p>",
        "<h2>Answer</h2>",
        "<ul>" + "".join(f"<li>{inline(line[2:])}</li>" for line in answer) + "</ul>",
    ]
    for target in targets_of(results):
        section_md, section_html = _target_section(target, [p for p in results.ingest_points if p.target == target])
        md += section_md
        html += section_html
    md += [NOTES, ""]
    html.append(f"<p>{escape(NOTES)}</p>")
    plots = folder / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    plot = docs_per_s_plot(results, plots / "ingest_docs_per_s.png")
    if plot is not None:
        title = "Docs/s per combination (red: documents failed or lost)"
        md += [f"## {title}", "", md_figure(title, plot, folder), ""]
        html.append(f"<h2>{escape(title)}</h2>{html_figure(title, plot)}")
    return "\n".join(md), "\n".join(html)
