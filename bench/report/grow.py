"""The grow report: the answer per target first, then each rung's figures, then the plots — latency against size
(log axes) with each fitted law, quality against size, ingest rate against size, the app's memory and store against
size; a ladder across vector stores puts the stores side by side first (bench/report/grow_stores.py)."""

from __future__ import annotations

from html import escape
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from bench.core.growth_laws import predict
from bench.report.grow_stores import side_by_side_table, stores_plot
from bench.report.page import Rows, html_figure, html_table, inline, md_figure, md_table
from bench.report.plots import save_figure
from bench.results.schema import GrowRungRecord, GrowSummaryRecord, GrowthLaw
from bench.results.schema.grow import GrowUnit
from bench.results.store import Results


def _targets(results: Results) -> list[str]:
    return list(dict.fromkeys([*results.header.targets, *(r.target for r in results.grow_rungs)]))


def _rungs(results: Results, target: str) -> list[GrowRungRecord]:
    return sorted((r for r in results.grow_rungs if r.target == target), key=lambda r: r.rung)


def answer_lines(results: Results) -> list[str]:
    summaries = {s.target: s for s in results.grow_summaries}
    lines = [f"- {summaries[t].answer}" for t in _targets(results) if t in summaries]
    return lines or ["- no answer: no rung finished"]


def _cell(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None or not np.isfinite(value) else format(value, spec)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f}"


def rung_table(results: Results) -> Rows:
    labels = list(dict.fromkeys(m for r in results.grow_rungs for m in r.metrics))
    unit = results.grow_rungs[0].unit if results.grow_rungs else "docs"
    header = ["target", "rung", f"size ({unit})", "docs", "chunks", "ingest", "s", "app s", "docs/s", "p50 ms"]
    header.append("p99 ms")
    header += [*labels, "RSS MiB", "store MiB", "load", "lag p99 ms", "errors"]
    rows = []
    for target in _targets(results):
        for r in _rungs(results, target):
            errors = r.error or ", ".join(f"{e.key} ×{e.count}: {e.first_message}" for e in r.error_counts)
            rows.append(
                [
                    target,
                    str(r.rung),
                    f"{r.size:,}",
                    f"{r.docs:,}" if r.docs is not None else (f"{r.size:,}" if r.unit == GrowUnit.DOCS else "-"),
                    f"{r.chunks:,}" if r.chunks is not None else "-",
                    r.ingest_mode + (" (resumed)" if r.resumed else ""),
                    _cell(r.ingest_seconds, ".2f"),
                    _cell(r.app_ingest_seconds, ".2f"),
                    _cell(r.docs_per_s, ",.0f"),
                    _cell(r.latency_ms.get("p50")),
                    _cell(r.latency_ms.get("p99")),
                    *(_cell(r.metrics.get(m), ".3f") for m in labels),
                    _mib(r.app_rss_bytes),
                    _mib(r.store_bytes),
                    _cell(r.machine.load if r.machine is not None else None),
                    _cell(r.lag_p99_ms),
                    errors or "-",
                ]
            )
    return header, rows


def calls_table(results: Results) -> Rows:
    """The app's provider calls per rung, target, phase and meter route (--meter-upstream): none without a meter."""
    header = ["target", "rung", "phase", "route", "calls", "texts", "texts/call", "prompt tokens", "not ok", "s"]
    rows = []
    for target in _targets(results):
        for r in _rungs(results, target):
            for phase, by_route in (("ingest", r.ingest_calls), ("queries", r.query_calls)):
                for route, c in by_route.items():
                    failed = sum(e.count for e in c.failed)
                    rows.append(
                        [
                            target,
                            str(r.rung),
                            phase,
                            route,
                            f"{c.calls:,}",
                            f"{c.texts:,}",
                            _cell(c.texts_per_call_mean),
                            f"{c.prompt_tokens:,}",
                            str(failed),
                            _cell(c.seconds, ".2f"),
                        ]
                    )
    return header, rows


def law_table(summaries: list[GrowSummaryRecord]) -> Rows:
    header = ["target", "latency", "law", "a (ms)", "b", "held-out error", "fit error", "rungs", "credible laws"]
    header += ["reaches the SLO at", "credible laws reach it at"]
    rows = [
        [
            s.target,
            law.quantity,
            law.law,
            f"{law.a:.4g}",
            f"{law.b:.4g}",
            f"{law.held_out_error:.1%}",
            f"{law.fit_error:.1%}",
            str(law.rungs),
            ", ".join(law.credible_laws) or law.law,
            f"~{law.slo_size:,.0f}" if law.slo_size is not None else "-",
            _slo_range(law),
        ]
        for s in summaries
        for law in s.laws
    ]
    return header, rows


def _slo_range(law: GrowthLaw) -> str:
    if law.slo_size_low is None:
        return "-"
    high = f"{law.slo_size_high:,.0f}" if law.slo_size_high is not None else "never"
    return f"{law.slo_size_low:,.0f} to {high}"


def _curve(law: GrowthLaw, sizes: np.ndarray) -> np.ndarray:
    return predict(law.law, law.a, law.b, sizes)


def latency_plot(results: Results, path: Path) -> Path | None:
    targets = [t for t in _targets(results) if any(r.latency_ms for r in _rungs(results, t))]
    if not targets:
        return None
    laws = {(s.target, law.quantity): law for s in results.grow_summaries for law in s.laws}
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, target in enumerate(targets):
        color = f"C{i}"
        rungs = [r for r in _rungs(results, target) if r.latency_ms]
        sizes = np.asarray([r.size for r in rungs], dtype=float)
        for quantity, style in (("p50", "o-"), ("p99", "s--")):
            ax.plot(sizes, [r.latency_ms[quantity] for r in rungs], style, color=color, label=f"{target} {quantity}")
            law = laws.get((target, quantity))
            if law is not None:
                grid = np.geomspace(sizes.min(), sizes.max(), 50)
                ax.plot(grid, _curve(law, grid), ":", color=color, alpha=0.6, label=f"{target} {quantity}: {law.law}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"knowledge-base size ({results.grow_rungs[0].unit})")
    ax.set_ylabel("latency per query, ms (log)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save_figure(fig, path)


def quality_plot(results: Results, path: Path) -> Path | None:
    labels = list(dict.fromkeys(m for r in results.grow_rungs for m in r.metrics))
    if not labels:
        return None
    fig, axes = plt.subplots(1, len(labels), figsize=(5 * len(labels), 4), squeeze=False)
    for ax, label in zip(axes[0], labels):
        for i, target in enumerate(_targets(results)):
            rungs = [r for r in _rungs(results, target) if label in r.metrics]
            ax.plot([r.size for r in rungs], [r.metrics[label] for r in rungs], "o-", color=f"C{i}", label=target)
        ax.set_xscale("log")
        ax.set_xlabel("knowledge-base size (log)")
        ax.set_title(label)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, path)


def ingest_plot(results: Results, path: Path) -> Path | None:
    if not any(r.docs_per_s for r in results.grow_rungs):
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for i, target in enumerate(_targets(results)):
        rungs = [r for r in _rungs(results, target) if r.docs_per_s]
        mode = rungs[0].ingest_mode if rungs else ""
        ax.plot(
            [r.size for r in rungs],
            [r.docs_per_s or 0.0 for r in rungs],
            "o-",
            color=f"C{i}",
            label=f"{target} ({mode})",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("knowledge-base size (log)")
    ax.set_ylabel("documents ingested / s (log)")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    return save_figure(fig, path)


def memory_plot(results: Results, path: Path) -> Path | None:
    """The app's RSS and its store's bytes on disk against size, where they were read."""
    panels = [(f, label) for f, label in RESOURCES if any(getattr(r, f) is not None for r in results.grow_rungs)]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (attribute, label) in zip(axes[0], panels):
        for i, target in enumerate(_targets(results)):
            rungs = [r for r in _rungs(results, target) if getattr(r, attribute) is not None]
            ax.plot(
                [r.size for r in rungs],
                [getattr(r, attribute) / 2**20 for r in rungs],
                "o-",
                color=f"C{i}",
                label=target,
            )
        ax.set_xscale("log")
        ax.set_xlabel("knowledge-base size (log)")
        ax.set_ylabel(f"{label}, MiB")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return save_figure(fig, path)


RESOURCES = (("app_rss_bytes", "app's resident memory"), ("store_bytes", "store on disk (data_dir)"))
NOTES = (
    "Latency: wall time of each query's own search call, one query at a time, answered queries only. Ingest: wall "
    "time of the target's prepare at the rung: incremental targets (Open WebUI, LightRAG) take only the rung's new "
    "documents; local engines (bm25, dense, hybrid) index the whole rung again (rebuild), so their docs/s is the "
    "rung's size over that time. App s: the part of it that is the app's ingest alone (uploads and the wait for the "
    "app to process them); the rest is ragbench's (configuration reads, listing and re-checking the base, settings). "
    "Quality: every judged query, a failed one as zero; distractors are never relevant. "
    "Laws: latency = a + b·f(size), chosen by the error predicting each rung from the rungs below it (docs/grow.md)."
)


def intro_line(results: Results) -> str:
    """The dataset and the ladder, as the header holds them."""
    dataset, ladder = results.header.dataset, results.header.grow or {}
    source = ladder.get("distractor_source", {})
    made = ""
    if source.get("kind") == "synthetic":
        lengths = source.get("length_words")
        median = lengths.get("median") if isinstance(lengths, dict) else None
        made = f" (vocabulary {source.get('vocabulary'):,} words, lengths median {median} words)"
    rungs = ", ".join(f"{n:,}" for n in ladder.get("rungs", []))
    slo = f"; SLO {ladder['slo']}" if ladder.get("slo") else ""
    return (
        f"Dataset {dataset.get('source')}: {dataset.get('documents')} documents of its own, {dataset.get('queries')} "
        f"queries. Rungs {rungs} {ladder.get('unit', '')}; distractors {ladder.get('distractors')}{made}{slo}."
    )


def render(results: Results, folder: Path) -> tuple[str, str]:
    status = results.end.status.value if results.end else "interrupted (no end record)"
    intro = intro_line(results)
    answer = answer_lines(results)
    md = ["# ragbench grow report", "", intro, "", f"Status: **{status}**", "", "## Answer", "", *answer, ""]
    html = [
        "<h1>ragbench grow report</h1>",
        f"<p>{escape(intro)}</p>",
        f"<p class='{'' if status == 'complete' else 'bad'}'>Status: {escape(status)}</p>",
        "<h2>Answer</h2>",
        "<ul>" + "".join(f"<li>{inline(line[2:])}</li>" for line in answer) + "</ul>",
    ]
    tables = (
        ("Stores side by side", side_by_side_table(results)),
        ("Growth laws", law_table(results.grow_summaries)),
        ("Rungs", rung_table(results)),
        ("Provider calls per rung (through the meter)", calls_table(results)),
    )
    for title, rows in tables:
        if rows[1]:
            md += [f"## {title}", "", md_table(*rows), ""]
            html.append(f"<h2>{escape(title)}</h2>{html_table(*rows)}")
    md += [NOTES, ""]
    html.append(f"<p>{escape(NOTES)}</p>")
    plots = folder / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    for title, draw, name in (
        ("Stores side by side: latency, memory and disk vs size (log axes)", stores_plot, "grow_stores.png"),
        ("Latency vs size (dotted: fitted law)", latency_plot, "grow_latency.png"),
        ("Quality vs size", quality_plot, "grow_quality.png"),
        ("Ingest rate vs size", ingest_plot, "grow_ingest.png"),
        ("Memory vs size", memory_plot, "grow_memory.png"),
    ):
        plot = draw(results, plots / name)
        if plot is not None:
            md += [f"## {title}", "", md_figure(title, plot, folder), ""]
            html.append(f"<h2>{escape(title)}</h2>{html_figure(title, plot)}")
    return "\n".join(md), "\n".join(html)
