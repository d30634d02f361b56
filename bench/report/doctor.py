"""The doctor report: every finding with its fix, problems first."""

from __future__ import annotations

from html import escape
from pathlib import Path

from bench.report.labels import labels_sentence
from bench.report.page import html_table, md_table
from bench.results.store import Results


def render(results: Results, out_dir: Path) -> tuple[str, str]:
    findings = sorted(results.of("doctor_finding"), key=lambda f: f.ok)  # stable: hop order kept within each group
    problems = sum(not f.ok for f in findings)
    hops = ", ".join(dict.fromkeys(f.hop for f in findings)) or "none"
    verdict = f"{problems} problem(s) found" if problems else "no problems found"
    lines = [
        f"Created {results.header.created} by ragbench {results.header.ragbench_version}; hops probed: {hops}."
        + labels_sentence(results.header),
        verdict,
    ]
    rows = (["hop", "status", "finding", "fix"], [[f.hop, "ok" if f.ok else "BAD", f.message, f.fix] for f in findings])
    markdown = "\n\n".join(["# ragbench doctor report", *lines, md_table(*rows)]) + "\n"
    html = (
        f"<h1>ragbench doctor report</h1><p>{escape(lines[0])}</p>"
        f'<p class="{"bad" if problems else ""}">{verdict}</p>{html_table(*rows)}'
    )
    return markdown, html
