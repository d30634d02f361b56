"""The report of `load --interleave`: per point the verdict first, the paired interval of each ratio and the
smallest step it could see, the rounds' ratios over time (both sides' texts/s beside them: drift shows as both
moving together while their ratio stays), then the load report of the windows."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.load.interleave import missing_pairs
from bench.load.interleave_record import cannot_judge_text
from bench.report.load import render
from bench.report.page import html_figure, html_table, md_figure, md_table
from bench.report.plots import save_figure
from bench.results.outdir import safe_filename
from bench.results.schema import InterleavedRecord, PairedFigure
from bench.results.schema.load import InterleavedVerdict, PairedFigureName
from bench.results.store import Results

NAMES = {"texts_per_s": "texts/s", "p50": "p50", "p99": "p99"}


def render_interleave(results: Results, folder: Path) -> tuple[str, str]:
    """The paired sections (the answer) first, then the load report of every window they rest on; a point with
    windows but no paired record (the run stopped before 2 rounds) says so at the top."""
    missing = missing_pairs(results)
    md: list[str] = [*(f"{line}\n" for line in missing)]
    html: list[str] = [f"<p class='bad'>{escape(line)}</p>" for line in missing]
    slices = int((results.header.load or {}).get("slices", 1))
    for number, record in enumerate(results.interleaved, 1):
        title = f"Interleaved: {record.current} ÷ {record.baseline}, {record.point}"
        verdict = f"Verdict: **{verdict_text(record)}** over {len(record.rounds)} rounds"
        header, rows = figures_table(record)
        md += [f"## {title}", "", verdict, "", md_table(header, rows), "", *_notes(record, slices), ""]
        round_header, round_rows = rounds_table(record)
        css = "bad" if record.verdict in (InterleavedVerdict.FAIL, InterleavedVerdict.CANNOT_JUDGE) else ""
        html += [
            f"<h2>{escape(title)}</h2>",
            f"<p class='{css}'>Verdict: <b>{escape(verdict_text(record))}</b> over {len(record.rounds)} rounds</p>",
            html_table(header, rows),
            *(f"<p>{escape(note)}</p>" for note in _notes(record, slices)),
        ]
        plot = rounds_plot(record, folder / "plots" / f"load_interleave_{number}_{safe_filename(record.point)}.png")
        md += [
            md_figure("Rounds over time", plot, folder),
            "",
            "### Rounds",
            "",
            md_table(round_header, round_rows),
            "",
        ]
        html.append(f"<h3>Rounds over time</h3>{html_figure('Rounds over time', plot)}")
        html.append(f"<h3>Rounds</h3>{html_table(round_header, round_rows)}")
    body_md, body_html = render(results, folder, "load", (md, html))
    return body_md + "\n", body_html


def verdict_text(record: InterleavedRecord) -> str:
    """The verdict in capitals; `too busy`: neither pass nor fail, with the rounds left out as the machine's;
    `cannot judge`: why."""
    if record.verdict == InterleavedVerdict.CANNOT_JUDGE:
        return cannot_judge_text(record)
    if record.verdict != InterleavedVerdict.TOO_BUSY:
        return record.verdict.upper()
    busy = sum(r.too_busy is not None for r in record.rounds)
    return f"THIS MACHINE WAS TOO BUSY TO DECIDE ({busy} of {len(record.rounds)} rounds left out)"


def figures_table(record: InterleavedRecord) -> tuple[list[str], list[list[str]]]:
    header = [
        "figure",
        "ratio B ÷ A [95% interval]",
        "pairs",
        "limit",
        "verdict",
        "paired noise",
        "unpaired noise",
        "smallest step seen (paired)",
        "(unpaired)",
        "rounds for the limit's step",
    ]
    return header, [_row(f) for f in record.figures]


def rounds_table(record: InterleavedRecord) -> tuple[list[str], list[list[str]]]:
    """Each round in the order measured: who went first, both sides' figures and the ratios B ÷ A."""
    a, b = record.baseline, record.current
    header = ["round", "first", f"{a} texts/s", f"{b} texts/s", "ratio", f"{a} p50 / p99 ms", f"{b} p50 / p99 ms"]
    header += ["p50 ratio", "p99 ratio", "client lag p99 A / B ms", "left out"]
    rows = [
        [
            str(r.round),
            r.first,
            f"{r.baseline_texts_per_s:.1f}",
            f"{r.current_texts_per_s:.1f}",
            _num(r.texts_per_s_ratio),
            f"{_num(r.baseline_p50_ms, 1)} / {_num(r.baseline_p99_ms, 1)}",
            f"{_num(r.current_p50_ms, 1)} / {_num(r.current_p99_ms, 1)}",
            _num(r.p50_ratio),
            _num(r.p99_ratio),
            f"{_num(r.baseline_loop_lag_p99_ms, 1)} / {_num(r.current_loop_lag_p99_ms, 1)}",
            "too busy" if r.too_busy is not None else "",
        ]
        for r in record.rounds
    ]
    return header, rows


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _row(f: PairedFigure) -> list[str]:
    r = f.ratio
    if f.silent_rounds:  # B stopped answering: a ratio of 0 in a log, no interval or noise means anything
        said = f"B answered nothing in round(s) {', '.join(map(str, f.silent_rounds))}: it stopped answering"
        limit = f"×{f.limit:g}" if f.limit is not None else "not gated"
        return [NAMES.get(f.figure, f.figure), said, f"{f.rounds} rounds", limit, f.verdict or "-", *["-"] * 5]
    needed = "-"
    if f.limit is not None and f.limit != 1:
        needed = f"{_count(f.rounds_needed)} (unpaired {_count(f.rounds_needed_unpaired)})"
    return [
        NAMES.get(f.figure, f.figure),
        f"×{r.mean:.3f} [{r.low:.3f}, {r.high:.3f}]",
        f"{f.pairs} slice pairs of {f.rounds} rounds" if f.pairs else f"{f.rounds} rounds",
        f"×{f.limit:g}" if f.limit is not None else "not gated",
        f.verdict or "-",
        f"±{math.expm1(f.paired_noise):.1%}",
        f"±{math.expm1(f.unpaired_noise):.1%}",
        f"×{f.detectable:.3f}",
        f"×{f.detectable_unpaired:.3f}",
        needed,
    ]


def _count(n: int | None) -> str:
    return str(n) if n is not None else "more than 1000"


def _notes(record: InterleavedRecord, slices: int) -> list[str]:
    """How the figures were made (the grain: whole windows or slices), and what was not judged."""
    interval = f"exact {record.confidence:.0%} Wilcoxon signed-rank interval (Student t on the logs below 6 rounds)"
    if record.max_time_s is not None:
        interval = f"{record.confidence:.0%} anytime-valid interval (--max-time, below)"
    notes = [
        "Ratio: the Hodges-Lehmann estimate of the rounds' ratios (median of their logs' Walsh averages), "
        f"{interval}. "
        f"Smallest step: the ratio seen with {record.power:.0%} power at a one-sided {record.false_alarm:.1%} false-"
        "alarm rate from the paired noise (1.4826 × MAD of log B/A) and from the unpaired noise of the same "
        "windows. The "
        f"order within each round was drawn at random: {sum(r.first == record.baseline for r in record.rounds)} "
        f"of {len(record.rounds)} rounds measured {record.baseline} first"
        + (
            f", each side's window in {slices} slices alternated with the other side's (X Y Y X …); texts/s is "
            "paired by slice (each round's k-th slice of A with B's k-th, back to back), p50 and p99 by round."
            if slices > 1
            else ", one whole window per side."
        )
    ]
    notes += [f"{NAMES.get(n, n)} not judged: fewer than 2 rounds have it on both sides." for n in record.not_judged]
    if record.max_time_s is not None:
        notes.append(
            f"--max-time {record.max_time_s:g}s: rounds until the interval cleared the limit or the budget was "
            f"spent ({record.stopped or 'stopped'}); the intervals are anytime-valid 95% confidence sequences "
            "(betting on clipped scores of the pairs' log ratios), valid although looked at after every round."
        )
    notes += [f"Round {r.round} left out: {r.too_busy}" for r in record.rounds if r.too_busy is not None]
    return notes


def rounds_plot(record: InterleavedRecord, path: Path) -> Path:
    """Top: each side's texts/s per round (drift moves both); bottom: the ratio B ÷ A per round, its paired
    interval and the limit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    rounds = [r.round for r in record.rounds]
    top.plot(rounds, [r.baseline_texts_per_s for r in record.rounds], marker="o", label=f"{record.baseline} (A)")
    top.plot(rounds, [r.current_texts_per_s for r in record.rounds], marker="s", label=f"{record.current} (B)")
    top.set_ylabel("texts/s")
    top.legend(fontsize=8)
    top.grid(alpha=0.3)
    ratios = [r.texts_per_s_ratio if r.texts_per_s_ratio is not None else math.nan for r in record.rounds]
    bottom.plot(rounds, ratios, marker="o", color="black", label="B ÷ A texts/s")
    figure = next((f for f in record.figures if f.figure == PairedFigureName.TEXTS_PER_S), None)
    if figure is not None and not figure.silent_rounds:
        bottom.axhspan(figure.ratio.low, figure.ratio.high, alpha=0.2, label="paired 95% interval")
        if figure.limit is not None:
            bottom.axhline(figure.limit, color="red", linestyle="--", label=f"limit ×{figure.limit:g}")
    bottom.set_xlabel("round")
    bottom.set_ylabel("ratio B ÷ A")
    bottom.legend(fontsize=8)
    bottom.grid(alpha=0.3)
    return save_figure(fig, path)
