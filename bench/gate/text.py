"""`compare`'s verdict as text lines or JSON on stdout, and the one-line verdict every output opens with."""

from __future__ import annotations

import json
from enum import StrEnum

from bench.core.errors import UserError
from bench.gate.checks import CheckKind, Comparison, Status


class OutputFormat(StrEnum):
    """`compare --format`: what the verdict on stdout is written as."""

    TEXT = "text"
    MD = "md"
    JSON = "json"


_MARK = {Status.PASS: "pass", Status.FAIL: "FAIL", Status.INFO: "info"}


def parse_output_format(text: str) -> OutputFormat:
    try:
        return OutputFormat(text)
    except ValueError:
        raise UserError(f"--format {text!r}: expected one of {', '.join(OutputFormat)}") from None


def inconclusive_line(comparison: Comparison) -> str:
    """`; 2 INCONCLUSIVE (...)`: gates that could neither show nor rule out a regression (a load interval
    straddling its limit, a quality drop significant only before the family's correction), and what they
    counted as."""
    unsure = [c for c in comparison.checks if c.inconclusive]
    policy = comparison.inconclusive_policy
    why = {
        CheckKind.LOAD: "the runner's noise is wider than the change gated",
        CheckKind.QUALITY: "a drop significant alone, not across the gated family",
    }
    reasons = "; ".join(why[kind] for kind in why if any(c.kind == kind for c in unsure))
    return f"; {len(unsure)} INCONCLUSIVE ({reasons}; counted as {policy}: --inconclusive {policy})" if unsure else ""


def likely_line(comparison: Comparison) -> str:
    """`INCONCLUSIVE — likely regression: load tei …: throughput ×0.841 [0.720, 0.984] is past the limit ×0.95 and
    excludes no change`: an inconclusive gate whose change is significant, past the limit in its point estimate."""
    likely = [c for c in comparison.checks if c.likely_regression]
    if not likely:
        return ""
    first = f"{likely[0].title}: {likely[0].likely_regression}"
    more = f" (and {len(likely) - 1} more check(s))" if len(likely) > 1 else ""
    return f"INCONCLUSIVE — likely regression: {first}{more}"


def verdict_line(comparison: Comparison) -> str:
    gated = [c for c in comparison.checks if c.status != Status.INFO]
    skipped = len(comparison.checks) - len(gated)
    more = f"; {skipped} not gated, each says why" if skipped else ""
    more += inconclusive_line(comparison)
    busy = sum(1 for c in comparison.checks if c.figures.get("machine_too_busy") and c.status == Status.INFO)
    more += f"; {busy} load point(s) not judged: this machine was too busy (each says its figures)" if busy else ""
    likely = likely_line(comparison)
    if comparison.passed and likely:  # said first, whatever the exit code the user chose
        return f"ragbench compare: {likely}; counted as pass ({len(gated)} checks, none failed{more})"
    if likely:
        more += f"; {likely}"
    if comparison.passed:
        return f"ragbench compare: pass ({len(gated)} check{'' if len(gated) == 1 else 's'}, none regressed{more})"
    decided = comparison.regressions[0].title  # the check that decided it, named; its line below says the figures
    return f"ragbench compare: FAIL ({len(comparison.regressions)} of {len(gated)} checks regressed{more}) — {decided}"


def render_text(comparison: Comparison) -> str:
    lines = [verdict_line(comparison), f"baseline: {comparison.baseline}", f"current:  {comparison.current}"]
    lines += [f"!! {note}" for note in comparison.notes]
    lines += [
        f"{_MARK[c.status]:4}  {c.kind}: {(c.source + ' ') if c.source else ''}{c.summary}" for c in comparison.checks
    ]
    return "\n".join(lines) + "\n"


def render_json(comparison: Comparison) -> str:
    return (
        json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False, allow_nan=False, default=lambda v: None) + "\n"
    )
