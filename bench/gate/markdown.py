"""`compare`'s markdown summary (`--summary`, $GITHUB_STEP_SUMMARY, `--format md`): the verdict line, one
table per check kind, then what was inconclusive or not gated."""

from __future__ import annotations

from bench.core.pvalues import fmt_p
from bench.gate.checks import Check, CheckKind, Comparison, Status
from bench.gate.figures import fmt_change, fmt_num
from bench.gate.quality import POWER
from bench.gate.text import inconclusive_line, likely_line

_MD_MARK = {Status.PASS: "✅ pass", Status.FAIL: "❌ **FAIL**", Status.INFO: "ℹ️ not gated"}
SUMMARY_HEAD = "## ragbench compare: "  # how render_markdown opens every summary: an earlier one is recognised


def render_markdown(comparison: Comparison) -> str:
    head = "✅ pass" if comparison.passed else f"❌ FAIL — {len(comparison.regressions)} regression(s)"
    head += inconclusive_line(comparison).replace(";", " ⚠️", 1)
    if likely_line(comparison):  # first, whatever the exit code the user chose
        head = f"⚠️ {likely_line(comparison)} — {head}"
    lines = [
        f"{SUMMARY_HEAD}{head}",
        "",
        f"baseline `{comparison.baseline}` → current `{comparison.current}`",
        "",
    ]
    for note in comparison.notes:
        lines.append(f"> **⚠️ {_md_escape(note)}**")
        lines.append(">")
    if comparison.notes:
        lines[-1] = ""
    ordered = sorted(comparison.checks, key=lambda c: c.status != Status.FAIL)  # regressions first
    for kind, header, cells in _MD_TABLES:
        rows = [c for c in ordered if c.kind == kind and c.figures]
        if rows:
            lines += [f"### {kind}", "", "| result | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
            lines += [f"| {_md_mark(c)} | " + " | ".join(_md_escape(x) for x in cells(c)) + " |" for c in rows]
            lines.append("")
    others = [c for c in ordered if not c.figures or c.kind not in {kind for kind, _, _ in _MD_TABLES}]
    if others:
        lines += ["| result | check | figures |", "|---|---|---|"]
        lines += [
            f"| {_MD_MARK[c.status]} | {c.kind}: {_md_escape(c.title.split(': ', 1)[1])} | {_md_escape(c.summary)} |"
            for c in others
        ]
        lines.append("")
    unsure = [c for c in comparison.checks if c.inconclusive]
    if unsure:  # an interval that straddles its limit is neither a pass nor a regression: said, never silent
        lines += [f"**Inconclusive ({len(unsure)} of {len(comparison.checks)} checks, {unsure[0].inconclusive}):**", ""]
        lines += [f"- ⚠️ {c.kind}: {_md_escape(c.summary)}" for c in unsure]
        lines.append("")
    skipped = [c for c in comparison.checks if c.status == Status.INFO]
    if skipped:  # a check that gates nothing says so here, never as a silent pass
        lines += [f"**Not gated ({len(skipped)} of {len(comparison.checks)} checks):**", ""]
        lines += [
            f"- ℹ️ {c.kind}: {_md_escape(_where(c))} — {_md_escape(c.not_gated or 'reported only')}" for c in skipped
        ]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_mark(check: Check) -> str:
    return f"⚠️ inconclusive ({check.status})" if check.inconclusive else _MD_MARK[check.status]


def _where(check: Check) -> str:
    return f"{check.source}: {check.name}" if check.source else check.name


def _quality_cells(c: Check) -> list[str]:
    f = c.figures
    return [
        _where(c),
        f"{f['baseline']:.4f}",
        f"{f['current']:.4f}",
        f"{f['effect']:+.4f} [{f['ci_low']:+.4f}, {f['ci_high']:+.4f}]",
        f"{fmt_p(f['p'])} ({'not gated' if c.not_gated else fmt_p(f['p_holm'])})",
        str(f["n"]),
        fmt_num(f["mde"], 4) + f" (α {f['mde_alpha']:.3g})",
        "–" if c.not_gated else str(f["max_drop"]),
    ]


def _load_cells(c: Check) -> list[str]:
    f = c.figures

    change = fmt_change(f["p99_change"])
    return [
        _where(c),
        f"{fmt_num(f['baseline_texts_per_s'])} → {fmt_num(f['current_texts_per_s'])}",
        fmt_num(f["throughput_ratio"], 3),
        f"{fmt_num(f['baseline_p99_ms'])} → {fmt_num(f['current_p99_ms'])}",
        change,
        f"{f['baseline_errors']} → {f['current_errors']} ({f['baseline_error_rate']:.2%} → "
        f"{f['current_error_rate']:.2%})",
        "yes" if f["client_saturated"] else "no",
    ]


def _cost_cells(c: Check) -> list[str]:
    f = c.figures

    change = fmt_change(f["query_p99_change"])
    return [
        _where(c),
        f"{fmt_num(f['baseline_ingest_texts_per_s'])} → {fmt_num(f['current_ingest_texts_per_s'])}",
        fmt_num(f["ingest_ratio"], 3),
        f"{fmt_num(f['baseline_query_p99_ms'])} → {fmt_num(f['current_query_p99_ms'])}",
        change,
        "; ".join(f["not_gated"]) or "–",
    ]


def _ingest_cells(c: Check) -> list[str]:
    f = c.figures
    return [
        _where(c),
        f"{fmt_num(f['baseline_docs_per_s'], 2)} → {fmt_num(f['current_docs_per_s'], 2)}",
        fmt_num(f["docs_per_s_ratio"], 3),
        f"{f['baseline_failed_or_lost']} of {f['baseline_documents']} → "
        f"{f['current_failed_or_lost']} of {f['current_documents']}",
        "; ".join(f["not_gated"]) or "–",
    ]


_MD_TABLES = [
    (
        CheckKind.QUALITY,
        [
            "target measure",
            "baseline",
            "current",
            "effect [95% CI, unadjusted]",
            "p (Holm over the gated)",
            "queries",
            f"detects a drop ≥ ({POWER:.0%} power)",
            "max drop",
        ],
        _quality_cells,
    ),
    (
        CheckKind.COST,
        ["target", "ingest texts/s", "ratio", "query p99 ms", "p99 change", "not gated"],
        _cost_cells,
    ),
    (
        CheckKind.LOAD,
        ["point", "texts/s", "ratio", "p99 ms", "p99 change", "errors (rate)", "client saturated"],
        _load_cells,
    ),
    (
        CheckKind.INGEST,
        ["target combination", "docs/s", "ratio", "documents failed or lost (any rise fails)", "not gated"],
        _ingest_cells,
    ),
]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
