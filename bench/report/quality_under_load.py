"""The quality report's section for `quality --background`: each target's measure and per-query p99 against the
background rate, beside the idle run (rate 0) with its interval and the paired comparison (Holm) with it; the
background stream's own figures at each rate; and which queries changed under load and why: the query failed
(its error), came back empty, or was answered with a different ranking (with the target's warnings on it). A
loaded run whose stream failed or was past its error limit is marked not measured under load: no difference from
idle is shown for it, nor its queries as changed under load. The loaded-vs-idle tables lead the report (beside its
results table); the changed queries come with the evidence, after the paired verdicts."""

from __future__ import annotations

import re
from html import escape

from bench.core.pvalues import fmt_p
from bench.load import histograms
from bench.load.recorder import status_outcome
from bench.quality.under_load import not_under_load, rate_text, split_loaded_name
from bench.report.page import html_table, md_table
from bench.report.quality_tables import fmt, over
from bench.results.schema import ComparisonRecord, LoadPointRecord, QueryRecord
from bench.results.store import Results

TITLE = "Quality under background load"
CHANGED = "Queries that changed under load"
SHOWN_QUERIES = 20  # changed queries listed per loaded run; the rest are counted
_STATUS = re.compile(r"HTTP (\d{3})")


def error_class(message: str) -> str:
    """A failed query's error in the load engine's classes (429, too_large, 4xx, 5xx, timeout, connection), from
    the message the target recorded; `other` where it names none of them."""
    status = _STATUS.search(message)
    if status:
        return status_outcome(int(status.group(1)))
    lowered = message.lower()
    if "timed out" in lowered or "timeout" in lowered:
        return "timeout"
    return "connection" if "connect" in lowered else "other"


def errors_by_class(queries: list[QueryRecord]) -> str:
    """`3 (429: 2, timeout: 1)`, or `0`."""
    counts: dict[str, int] = {}
    for q in queries:
        if q.error:
            counts[error_class(q.error)] = counts.get(error_class(q.error), 0) + 1
    detail = ", ".join(f"{cls}: {n}" for cls, n in sorted(counts.items()))
    return f"{sum(counts.values())} ({detail})" if counts else "0"


def _runs(results: Results) -> dict[str, list[tuple[float, str]]]:
    """Base target -> its (rate, run name) pairs, idle first."""
    runs: dict[str, list[tuple[float, str]]] = {}
    for target in results.targets:
        split = split_loaded_name(target.name)
        if split is not None:
            runs.setdefault(split[0], []).append((split[1], target.name))
    return {base: sorted(pairs) for base, pairs in runs.items() if min(pairs)[0] == 0 and len(pairs) > 1}


def _comparison(results: Results, measure: str, a: str, b: str) -> ComparisonRecord | None:
    return next((c for c in results.comparisons if c.measure == measure and {c.a, c.b} == {a, b}), None)


def rate_figure(rate: float) -> str:
    """A stream's achieved rate to four significant figures (`5.238`, not `5` for a stream asked for 5.238/s)."""
    return f"{rate:.0f}" if rate >= 1000 else f"{rate:.4g}"


def _stream(points: list[LoadPointRecord], rate: float) -> str:
    point = next((p for p in points if p.rate == rate), None)
    if point is None:
        return "idle" if rate == 0 else "–"
    scheduled = point.latency_ms.scheduled
    p99 = "–" if scheduled is None else histograms.quantile_text(scheduled, "p99", 1, " ms")
    requests = point.requests
    errors = sum(requests.errors.values())
    ok = point.throughput.requests_per_s
    figures = f"{rate_figure(ok)} req/s ok, scheduled p99 {p99}, {errors} errors, {requests.unsent} unsent"
    return figures + (f" ({point.status}: {point.problem})" if point.problem else "")


def rate_rows(results: Results, base: str, runs: list[tuple[float, str]]) -> tuple[list[str], list[list[str]]]:
    measure = results.header.measures[0]
    label = results.header.measure_labels.get(measure, measure)
    header = [
        "rate /s",
        f"{label} [95% CI]",
        "Δ vs idle",
        "p (Holm)",
        "p50 ms",
        "p99 ms",
        "errors (by class)",
        "background",
    ]
    idle = runs[0][1]
    unloaded = not_under_load(results)
    rows = []
    for rate, name in runs:
        metric, target = results.metric(name, measure), next(t for t in results.targets if t.name == name)
        c = None if name == idle or name in unloaded else _comparison(results, measure, idle, name)
        delta = None if c is None else (c.mean_diff if c.a == idle else -c.mean_diff)
        rows.append(
            [
                rate_text(rate)
                + (" (idle)" if rate == 0 else " (not measured under load)" if name in unloaded else ""),
                "–"
                if metric is None
                else f"{fmt(metric.mean)} [{fmt(metric.ci_low)}, {fmt(metric.ci_high)}]{over(metric)}",
                "–" if delta is None else f"{delta:+.4f}",
                "–" if c is None else fmt_p(c.p_randomization_holm),
                fmt(target.latency_ms.get("p50"), 1),
                fmt(target.latency_ms.get("p99"), 1),
                errors_by_class([q for q in results.queries if q.target == name]),
                _stream(results.load_points, rate),
            ]
        )
    return header, rows


def changed_rows(results: Results, runs: list[tuple[float, str]]) -> tuple[list[str], list[list[str]]]:
    """Every query whose measure moved from its idle value, per loaded run, with why."""
    measure = results.header.measures[0]
    idle = results.metric(runs[0][1], measure)
    unloaded = not_under_load(results)
    header = ["rate /s", "query", "idle", "loaded", "why"]
    rows: list[list[str]] = []
    for rate, name in runs[1:]:
        loaded = results.metric(name, measure)
        if idle is None or loaded is None or name in unloaded:
            continue
        queries = {q.qid: q for q in results.queries if q.target == name}
        moved = [qid for qid, v in idle.per_query.items() if loaded.per_query.get(qid, 0.0) != v]
        for qid in moved[:SHOWN_QUERIES]:
            why = why_changed(queries.get(qid))
            rows.append([rate_text(rate), qid, fmt(idle.per_query[qid]), fmt(loaded.per_query.get(qid, 0.0)), why])
        if len(moved) > SHOWN_QUERIES:
            rows.append([rate_text(rate), f"… {len(moved) - SHOWN_QUERIES} more", "", "", ""])
    return header, rows


def why_changed(query: QueryRecord | None) -> str:
    if query is None:
        return "not ranked"
    if query.error:
        return f"error: {query.error[:120]}"
    if query.hits == 0:
        return "empty result"
    # A target's warnings name what changed the ranking (Open WebUI's unreranked fallback: `null-scores`).
    return "ranking changed" + (f" ({', '.join(query.warnings)})" if query.warnings else "")


def render_under_load(results: Results) -> tuple[tuple[str, str], tuple[str, str]]:
    """(markdown, HTML) of the loaded-vs-idle tables, which the report puts beside its results table, and of the
    queries that changed under load, which it puts with the evidence; all empty for a run without `--background`."""
    md, html, changed_md, changed_html = [], [], [], []
    unloaded = not_under_load(results)
    for base, runs in _runs(results).items():
        table, changed = rate_rows(results, base, runs), changed_rows(results, runs)
        # The verdict first: a run that is not what it is named (no load, or not the load asked for).
        notes = [f"**{n} is not measured under load**: {unloaded[n]}." for _, n in runs if n in unloaded]
        md += [f"## {TITLE}: {base}", "", *[line for note in notes for line in (note, "")], md_table(*table), ""]
        html += [
            f"<h2>{escape(TITLE)}: {escape(base)}</h2>",
            *[
                f"<p><strong>{escape(n)} is not measured under load</strong>: {escape(unloaded[n])}.</p>"
                for _, n in runs
                if n in unloaded
            ],
            html_table(*table),
        ]
        changed_md += [f"## {CHANGED}: {base}", "", md_table(*changed) if changed[1] else "none", ""]
        changed_html += [f"<h2>{escape(CHANGED)}: {escape(base)}</h2>"]
        changed_html.append(html_table(*changed) if changed[1] else "<p>none</p>")
    return ("\n".join(md), "".join(html)), ("\n".join(changed_md), "".join(changed_html))
