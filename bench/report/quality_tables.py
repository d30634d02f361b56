"""Tabular views of a results file, shared by the markdown and HTML reports and the CSV export."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.errors import UserError
from bench.core.pvalues import fmt_p
from bench.core.secrets import mask
from bench.quality.rerank_pairs import ParsedSpec, rerank_pairs
from bench.quality.scoring import over_documents, untested_lengths
from bench.results.schema import MetricRecord, QueryRecord
from bench.results.store import Results

if TYPE_CHECKING:
    from rich.table import Table

SIGNIFICANCE_LEVEL = 0.05


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


LATENCY_NOTE = (
    "p50/p99: per-query latency, where a target answers one query at a time (– for local engines, "
    "which rank queries in batches and so have no time per query); search ms/query: the whole search "
    "time divided by the queries."
)


def summary_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    labels = [results.header.measure_labels.get(m, m) for m in results.header.measures]
    generated = any("generation" in t.config for t in results.targets)  # quality --generate
    header = [
        "target",
        *labels,
        "errors",
        *(["answer errors"] if generated else []),
        "empty",
        "p50 ms",
        "p99 ms",
        "search ms/query",
        "index s",
    ]
    rows = []
    for t in results.targets:
        cells = [t.name]
        for m in results.header.measures:
            rec = results.metric(t.name, m)
            cells.append(f"{fmt(rec.mean)} [{fmt(rec.ci_low, 3)}, {fmt(rec.ci_high, 3)}]{over(rec)}" if rec else "–")
        cells += [
            str(t.errors),
            *([str(t.answer_errors)] if generated else []),
            str(t.empty),
            fmt(t.latency_ms.get("p50"), 1),
            fmt(t.latency_ms.get("p99"), 1),
            fmt(1000 * t.search_seconds / t.queries if t.queries else None, 1),
            fmt(t.index_seconds, 1),
        ]
        rows.append(cells)
    return header, rows


def over(rec: MetricRecord | None) -> str:
    """ " over 10 documents" after a measure whose cut-off is past the target's ranking (MetricRecord.ranked)."""
    return f" {over_documents(rec.ranked)}" if rec is not None and rec.ranked is not None else ""


def length_notes(results: Results) -> list[str]:
    """Each pair of targets not tested on a measure because their rankings differ in length below its cut-off."""
    notes = []
    for measure in results.header.measures:
        label = results.header.measure_labels.get(measure, measure)
        for a, b in untested_lengths(results.metrics, measure, reranked_names(results)):
            notes.append(
                f"{label} not tested between `{a.target}` ({label}{over(a) or ' over its full ranking'}) and "
                f"`{b.target}` ({label}{over(b) or ' over its full ranking'}): rankings of different lengths "
                "below the cut-off are not comparable."
            )
    return notes


def reranked_names(results: Results) -> list[tuple[str, str]]:
    """(first stage X, X+rerank) by name, as `quality` paired them (bench/quality/rerank_pairs.py), on the specs
    as the run parsed them (TargetRecord.parsed)."""
    parsed: dict[str, ParsedSpec] = {}
    for t in results.targets:
        spec = t.parsed or _written_before(t.spec)
        if spec is not None:
            parsed[t.name] = spec
    return rerank_pairs(parsed)


def _written_before(text: str) -> ParsedSpec | None:
    """A file written before results kept the parsed spec: its spec string parsed, here alone (None: a kind this
    version does not know, not paired)."""
    from bench.targets.registry import parse_target_spec

    try:
        return parse_target_spec(text)
    except UserError:
        return None


CI_COLUMN = "mean b − a [95% CI, unadjusted]"


def holm_verdict(p_holm: float, ci_low: float, ci_high: float, better: str) -> str:
    """The verdict on the Holm-corrected p; the interval beside it is the pair's own (unadjusted), so where it
    excludes 0 and Holm does not find the difference the verdict says so rather than seem to contradict it."""
    if p_holm < SIGNIFICANCE_LEVEL:
        return better
    if ci_low > 0 or ci_high < 0:
        return "no significant difference after Holm (the unadjusted interval excludes 0)"
    return "no significant difference"


def comparison_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    header = [
        "measure",
        "a",
        "b",
        CI_COLUMN,
        "p (randomization)",
        "p (t-test)",
        "Holm p (rand.)",
        "Holm p (t)",
        "verdict",
    ]
    rows = []
    for c in results.comparisons:
        better = "b better" if c.mean_diff > 0 else "a better"
        rows.append(
            [
                results.header.measure_labels.get(c.measure, c.measure) + over(results.metric(c.a, c.measure)),
                c.a,
                c.b,
                f"{c.mean_diff:+.4f} [{c.ci_low:+.4f}, {c.ci_high:+.4f}]",
                fmt_p(c.p_randomization),
                fmt_p(c.p_ttest),
                fmt_p(c.p_randomization_holm),
                fmt_p(c.p_ttest_holm),
                holm_verdict(c.p_randomization_holm, c.ci_low, c.ci_high, better),
            ]
        )
    return header, rows


def cost_rows(results: Results) -> tuple[list[str], list[list[str]]]:
    keys = sorted({k for t in results.targets for k in t.cost})
    header = ["target", *[f"{k} / query" for k in keys], "warnings"]
    rows = [
        [
            t.name,
            *[fmt(t.cost.get(k), 2) for k in keys],
            ", ".join(f"{w}: {n}" for w, n in sorted(t.warnings.items())) or "none",
        ]
        for t in results.targets
    ]
    return header, rows


def write_per_query_csv(results: Results, path: Path) -> None:
    """One row per (target, query): every measure's value, latency, hits, error; with generated answers
    (`quality --generate`) also the answer, its error and its cost (answer_ms, LLM tokens)."""
    measures = results.header.measures
    queries = {(q.target, q.qid): q for q in results.queries}
    generated = any(q.answer is not None or q.answer_error for q in results.queries)
    answer_costs = sorted({k for q in results.queries for k in q.cost if k.startswith("answer_")})
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            [
                "target",
                "qid",
                *measures,
                "latency_ms",
                "hits",
                "error",
                *(["answer", "answer_error", *answer_costs] if generated else []),
            ]
        )
        for t in results.targets:
            found = {m: results.metric(t.name, m) for m in measures}
            metric = {m: record for m, record in found.items() if record is not None}
            if len(metric) < len(found):
                continue
            # Measures on different relevance sources (qrels, answers) may cover different queries.
            qids = dict.fromkeys(qid for m in measures for qid in metric[m].per_query)
            for qid in qids:
                q = queries.get((t.name, qid))
                writer.writerow(
                    [
                        t.name,
                        qid,
                        *[repr(metric[m].per_query[qid]) if qid in metric[m].per_query else "" for m in measures],
                        fmt(q.latency_ms, 3) if q else "",
                        q.hits if q else "",
                        mask(q.error or "") if q else "",
                        *(_answer_cells(q, answer_costs) if generated else []),
                    ]
                )


def _answer_cells(q: QueryRecord | None, answer_costs: list[str]) -> list[str]:
    if q is None:
        return ["", ""] + [""] * len(answer_costs)
    return [q.answer or "", mask(q.answer_error or ""), *[repr(q.cost[k]) if k in q.cost else "" for k in answer_costs]]


def print_console_summary(results: Results) -> None:
    """The results and significance tables on stdout, so the first command's result shows without a file."""
    from rich.console import Console

    terminal = Console()
    out = Console(width=None if terminal.is_terminal else 160)  # piped: wide enough that no cell wraps
    for table in console_summary(results):
        out.print(table)


def console_summary(results: Results) -> list[Table]:
    """What `quality` and `demo` print when they end (one screen): every target's measures with their
    intervals, and each pair's difference with its Holm-corrected verdict — the report's first two tables."""
    from rich.table import Table

    tables = []
    header, rows = summary_rows(results)
    keep = [i for i, column in enumerate(header) if column not in ("p50 ms", "p99 ms", "search ms/query", "index s")]
    summary = Table(
        title=f"ragbench {results.header.command}: {results.header.dataset_info.name or ''}"
        " (mean [95% CI] over every judged query)"
    )
    for i in keep:
        summary.add_column(header[i], justify="left" if i == 0 else "right")
    for row in rows:
        summary.add_row(*[mask(row[i]) for i in keep])
    tables.append(summary)
    header, rows = comparison_rows(results)
    if rows:
        columns = ("measure", "a", "b", CI_COLUMN, "Holm p (rand.)", "verdict")
        pairs = Table(title="paired significance (randomization test, Holm-corrected, at 0.05)")
        for column in columns:
            pairs.add_column(column)
        for row in rows:
            pairs.add_row(*[mask(row[header.index(c)]) for c in columns])
        tables.append(pairs)
    notes = length_notes(results)
    if notes:
        untested = Table(title="not tested")
        untested.add_column("why")
        for note in notes:
            untested.add_row(mask(note.replace("`", "")))
        tables.append(untested)
    return tables
