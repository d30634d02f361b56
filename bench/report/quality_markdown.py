"""The quality part of report.md: the same tables as the HTML report, plots linked as files."""

from __future__ import annotations

import json
from pathlib import Path

from bench.report.labels import labels_sentence
from bench.report.page import md_figure
from bench.report.page import md_table as _table
from bench.report.quality_answer import answer_heading, answer_lines
from bench.report.quality_frontier import (
    COST_BLOCKS_NOTE,
    PARTS_NOTE,
    RERANK_GAIN_NOTE,
    cost_block_rows,
    frontier_note,
    frontier_rows,
    latency_parts_rows,
    rerank_gain_rows,
)
from bench.report.quality_tables import LATENCY_NOTE, comparison_rows, cost_rows, length_notes, summary_rows
from bench.results.schema import EndStatus, TargetRecord
from bench.results.store import Results


def dataset_lines(results: Results) -> list[str]:
    d = results.header.dataset_info
    lines = [
        f"Dataset **{d.name}** ({d.format}"
        + (f", split {d.split}" if d.split else "")
        + f"): {d.documents} documents, {d.queries} judged queries, fingerprint `{d.fingerprint}`."
    ]
    lines += [f"Note: {n}. Scores on a sample are not comparable with full-corpus scores." for n in d.notes]
    return lines


COMPLETE = "Status: complete."  # everything measured


def status_line(results: Results) -> str:
    end = results.end
    failed = "".join(
        f" Target **{t.name}**: {'; '.join(failures)}."
        for t in results.targets
        if (failures := results.target_failures(t))
    )
    if end is None:
        return "**Status: incomplete** — the run was cut off; the targets below finished." + failed
    if end.status != EndStatus.COMPLETE:
        return f"**Status: {end.status}** — {end.error}. The targets below finished." + failed
    return ("**Status: complete, with failures.**" + failed) if failed else COMPLETE


def notes_lines(results: Results) -> list[str]:
    """What a reader must know about where the figures below come from."""
    finished = {t.name for t in results.targets}
    lines = []
    missing = [n for n in results.header.targets if n not in finished]
    if missing:
        lines.append(f"Not finished, so not in this report: {', '.join(f'`{n}`' for n in missing)}.")
    without = [t.name for t in results.targets if not all(results.metric(t.name, m) for m in results.header.measures)]
    if without:
        lines.append(
            f"No metrics (the run was cut off before they were written, and no run file and qrels to "
            f"rebuild them from): {', '.join(f'`{n}`' for n in without)}."
        )
    if results.recomputed:
        lines.append(
            f"Metrics recomputed by the report from the run files and `qrels.trec` (the run was cut off "
            f"before writing them): {', '.join(f'`{n}`' for n in results.recomputed)}."
        )
    if not results.comparisons and len(results.targets) - len(without) > 1:
        lines.append("No paired comparisons: the run stopped before computing them.")
    lines += length_notes(results)
    if results.repeated:
        lines.append(
            f"{results.repeated} repeated record(s) in the results file were ignored (the first of each counts)."
        )
    return lines


def answer_block(results: Results) -> list[str]:
    """The answer first: its heading and one bullet per line (quality_answer), then a blank line."""
    lines = answer_lines(results)
    if not lines:
        return []
    return [f"**{answer_heading(results)}:**", "", *[f"- **{line}**" for line in lines], ""]


def target_line(t: TargetRecord) -> str:
    return (
        f"Spec `{t.spec}`; run file `{t.run_file}`"
        + (
            "; **engine scores tied or did not strictly decrease down its ranking, so rank-derived scores were written "
            "(trec_eval scores the order the target returned)**"
            if t.scores_replaced
            else ""
        )
        + "."
    )


def served_cost_tables(results: Results) -> list[tuple[str, str, tuple[list[str], list[list[str]]]]]:
    """The latency parts and the embedding cost blocks, each where some target has them."""
    tables = [
        ("Per-query latency parts", PARTS_NOTE, latency_parts_rows(results)),
        ("Embedding cost", COST_BLOCKS_NOTE, cost_block_rows(results)),
    ]
    return [table for table in tables if table[2][1]]


def render_markdown(results: Results, plots: list[tuple[str, Path]], out_dir: Path, under_load: str = "") -> str:
    """The answer first (the results table, `under_load`'s loaded-vs-idle tables, the paired verdicts), then the
    plots and tables they rest on."""
    h = results.header
    parts = [
        "# ragbench quality report",
        "",
        *answer_block(results),
        f"Created {h.created} by ragbench {h.ragbench_version}; depth {h.depth}; seed {h.seed}.{labels_sentence(h)}",
        "",
        *dataset_lines(results),
        "",
        status_line(results),
        "",
        *[x for line in notes_lines(results) for x in (line, "")],
        "## Results",
        "",
        "Mean over every judged query (a failed or empty query scores 0, as trec_eval -c), "
        "with its 95% bootstrap interval.",
        "",
        _table(*summary_rows(results)),
        "",
        LATENCY_NOTE,
        "",
        *([under_load, ""] if under_load else []),
    ]
    if results.comparisons:
        parts += [
            "## Paired significance",
            "",
            f"Randomization test ({results.comparisons[0].permutations} sign flips) and paired t-test; "
            "Holm correction across the pairs tested of each measure (under --background: each loaded run against "
            "its idle run, and the targets at idle); verdict at 0.05 on the Holm-corrected "
            "randomization p-value. The interval is each pair's own 95% bootstrap interval, unadjusted: one "
            "that excludes 0 beside a Holm verdict of no difference is said in the verdict.",
            "",
            _table(*comparison_rows(results)),
            "",
        ]
    for title, path in plots:
        parts += [md_figure(title, path, out_dir), ""]
    parts += ["## What each quality point costs", "", _table(*frontier_rows(results)), "", frontier_note(results), ""]
    for title, note, (header, rows) in served_cost_tables(results):
        parts += [f"## {title}", "", note, "", _table(header, rows), ""]
    header, rows = rerank_gain_rows(results)
    if rows:
        parts += ["## Reranker gain", "", RERANK_GAIN_NOTE, "", _table(header, rows), ""]
    parts += ["## Cost and anomalies", "", _table(*cost_rows(results)), ""]
    parts += ["## Target configuration", "", *_configuration_lines(results)]
    return "\n".join(parts)  # bench.report masks the whole file


def _configuration_lines(results: Results) -> list[str]:
    """Per target its one-line summary and its configuration as JSON."""
    lines: list[str] = []
    for t in results.targets:
        lines += [
            f"### {t.name}",
            "",
            target_line(t),
            "",
            "```json",
            json.dumps(t.config, indent=2, sort_keys=True, ensure_ascii=False),
            "```",
            "",
        ]
    return lines
