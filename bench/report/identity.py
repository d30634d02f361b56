"""The identity report: verdicts per pair with their figures and named causes, endpoints, a plot of
agreement by text length."""

from __future__ import annotations

from html import escape
from pathlib import Path

from bench.report.labels import labels_sentence
from bench.report.page import Rows, html_figure, html_table, md_figure, md_table
from bench.report.plots import identity_length_plot
from bench.report.quality_tables import fmt
from bench.results.schema import IdentityEmbedPairRecord, IdentityVerdict
from bench.results.store import Results


def _endpoint_rows(results: Results) -> Rows:
    rows = []
    for e in results.of("identity_endpoint"):
        config = ", ".join(f"{k}={v}" for k, v in e.config.items() if v not in (None, ""))
        batch = (
            f"min cosine {e.batch_min_cosine:.6f} over {e.batch_texts} texts (≥ {e.batch_threshold}): {e.batch_verdict}"
            if e.batch_verdict is not None
            else "–"
        )
        top_n = (
            "–"
            if e.top_n_honoured is None
            else f"top_n={e.top_n_requested}: "
            + ("honoured" if e.top_n_honoured else f"IGNORED ({e.top_n_returned} results)")
        )
        rows.append([e.name, config, f"{e.seconds:.2f}", batch, top_n])
    return ["endpoint", "configuration", "seconds", "batch invariance", "rerank top_n"], rows


def _embed_rows(results: Results) -> Rows:
    rows = [
        [
            f"{p.a} ~ {p.b}",
            p.dtype,
            fmt(p.cosine_min, 6),
            fmt(p.cosine_p01, 6),
            fmt(p.cosine_mean, 6),
            f"{p.max_abs_diff:.2e}",
            f"{p.max_norm_diff:.2e}",
            fmt(p.top10_overlap, 3),
            p.verdict.upper(),
        ]
        for p in results.of("identity_embed_pair")
    ]
    return ["pair", "dtype", "cos min", "cos p01", "cos mean", "max |Δ|", "norm Δ", "top-10 overlap", "verdict"], rows


def _length_rows(results: Results) -> Rows:
    rows = [
        [
            f"{p.a} ~ {p.b}",
            b.tokens,
            str(b.texts),
            fmt(b.cosine_mean, 6),
            fmt(b.cosine_min, 6),
            str(b.failing),
        ]
        for p in results.of("identity_embed_pair")
        for b in p.by_token_length
    ]
    return ["pair", "tokens", "texts", "cos mean", "cos min", "failing"], rows


def _rerank_rows(results: Results) -> Rows:
    rows = [
        [
            f"{p.a} ~ {p.b}",
            p.dtype,
            f"{p.max_score_diff:.2e}",
            f"{p.mean_score_diff:.2e}",
            fmt(p.kendall_tau_mean),
            fmt(p.kendall_tau_min),
            p.verdict.upper(),
        ]
        for p in results.of("identity_rerank_pair")
    ]
    return ["pair", "dtype", "max |Δscore|", "mean |Δscore|", "Kendall τ mean", "Kendall τ min", "verdict"], rows


def _findings(results: Results) -> list[str]:
    """Per pair not passed: checks without enough data; what failed, the named causes with their fixes,
    the worst texts."""
    lines = []
    for p in [*results.of("identity_embed_pair"), *results.of("identity_rerank_pair")]:
        lines += [f"{p.a} ~ {p.b} insufficient data: {reason}" for reason in p.insufficient]
        if not p.failures:
            continue
        lines += [f"{p.a} ~ {p.b} failed: {failure}" for failure in p.failures]
        lines += [f"{p.a} ~ {p.b} cause [{c.code}]: {c.detail} — fix: {c.fix}" for c in p.causes]
        if isinstance(p, IdentityEmbedPairRecord):
            lines += [
                f"{p.a} ~ {p.b} worst text #{w.index} ({w.tokens} tokens), cosine {w.cosine:.5f}: {w.text[:100]!r}"
                for w in p.worst[:3]
            ]
    return lines


def render(results: Results, out_dir: Path) -> tuple[str, str]:
    summary = next(iter(results.of("identity")), None)
    created = f"Created {results.header.created} by ragbench {results.header.ragbench_version}."
    head = created + labels_sentence(results.header)
    if summary is None:
        status = "Incomplete: the run was cut off before its verdict."
    else:
        status = (
            f"Verdict: {summary.verdict.upper()}. {summary.texts} texts and {summary.queries} queries from "
            f"{summary.source}; token lengths {summary.token_lengths}; {summary.total_s:.2f} s in all, "
            f"ragbench's own work {summary.suite_s:.3f} s."
        )
    plot_dir = out_dir / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    plot = identity_length_plot(results, plot_dir / "identity_by_length.png")
    title = "Min cosine by text length"
    sections = [("Endpoints", _endpoint_rows(results))]
    if results.of("identity_embed_pair"):
        sections += [("Embedding pairs", _embed_rows(results)), ("By text length", _length_rows(results))]
    if results.of("identity_rerank_pair"):
        sections.append(("Rerank pairs", _rerank_rows(results)))
    findings = _findings(results)
    bad = summary is None or summary.verdict != IdentityVerdict.PASS  # a fail, or too little data to judge

    md = ["# ragbench identity report", "", head, "", status, ""]
    html = [
        f'<h1>ragbench identity report</h1><p>{escape(head)}</p><p class="{"bad" if bad else ""}">{escape(status)}</p>'
    ]
    for name, rows in sections:
        md += [f"## {name}", "", md_table(*rows), ""]
        html.append(f"<h2>{escape(name)}</h2>{html_table(*rows)}")
    if plot:
        md += [md_figure(title, plot, out_dir), ""]
        html.append(html_figure(title, plot))
    if findings:
        md += ["## Failures, causes and missing data", "", *[f"- {line}" for line in findings], ""]
        html.append(
            "<h2>Failures, causes and missing data</h2><ul>"
            + "".join(f"<li>{escape(line)}</li>" for line in findings)
            + "</ul>"
        )
    return "\n".join(md), "".join(html)
