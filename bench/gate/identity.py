"""Identity checks: per pair of endpoints, a verdict that flipped or figures that got worse past their
thresholds; per endpoint, batch invariance or top_n honoured lost."""

from __future__ import annotations

from typing import Any

from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.gate.figures import as_number, fmt_general
from bench.results.schema import IdentityVerdict
from bench.results.store import Results

# (figure, threshold key, +1 when higher is better): how far past its threshold a pair is
IDENTITY_FIGURES = {
    "identity_embed_pair": (
        "embed",
        [
            ("cosine_min", "min_cosine", 1),
            ("cosine_mean", "mean_cosine", 1),
            ("max_norm_diff", "max_norm_diff", -1),
            ("top10_overlap", "min_top10_overlap", 1),
        ],
    ),
    "identity_rerank_pair": (
        "rerank",
        [("max_score_diff", "max_score_diff", -1), ("kendall_tau_mean", "min_kendall_tau", 1)],
    ),
}


def compare_identity(
    base: Results, cur: Results, config: GateConfig, source: str = ""
) -> tuple[list[Check], list[str]]:
    """Per pair of endpoints: a verdict that flipped to fail, or a failing pair whose figures got worse past
    their thresholds, is a regression; per endpoint, batch invariance or top_n honoured lost."""
    checks: list[Check] = []
    notes: list[str] = []
    where = f"{source}: " if source else ""
    for kind, (label, figures) in IDENTITY_FIGURES.items():
        current = {(p.a, p.b): p for p in cur.of(kind)}
        seen: set[tuple[str, str]] = set()
        for b in base.of(kind):
            a_name, b_name = config.match.get(b.a, b.a), config.match.get(b.b, b.b)
            key = (a_name, b_name) if (a_name, b_name) in current else (b_name, a_name)
            name = f"{label} {a_name} vs {b_name}"
            c = current.get(key)
            if c is None:
                checks.append(
                    Check(CheckKind.IDENTITY, source, name, Status.FAIL, f"{name}: not measured in the current run")
                )
                continue
            seen.add(key)
            checks.append(_identity_pair(b, c, name, figures, source))
        for key in current.keys() - seen:
            notes.append(f"{where}identity pair {label} {key[0]} vs {key[1]} is new in the current run")
    current_endpoints = {e.name: e for e in cur.of("identity_endpoint")}
    for b in base.of("identity_endpoint"):
        c = current_endpoints.get(config.match.get(b.name, b.name))
        if c is None:
            continue  # its pairs say it is missing
        for attr, good, what in (
            ("batch_verdict", IdentityVerdict.PASS, "batch invariance"),
            ("top_n_honoured", True, "top_n honoured"),
        ):
            was, now = getattr(b, attr), getattr(c, attr)
            if was is None and now is None:
                continue
            status = Status.FAIL if was == good and now != good else Status.PASS
            checks.append(
                Check(
                    CheckKind.IDENTITY,
                    source,
                    f"{c.name} {what}",
                    status,
                    f"{c.name} {what}: {was} → {now}",
                    {"endpoint": c.name, "baseline": was, "current": now},
                )
            )
    return checks, notes


def _identity_pair(b: Any, c: Any, name: str, figures: list[tuple[str, str, int]], source: str) -> Check:
    thresholds = c.thresholds if isinstance(c.thresholds, dict) else {}
    parts, worse = [], []
    for figure, limit_key, sign in figures:
        was, now, limit = (
            as_number(getattr(b, figure)),
            as_number(getattr(c, figure)),
            as_number(thresholds.get(limit_key)),
        )
        parts.append(
            f"{figure} {fmt_general(was)} → {fmt_general(now)}"
            + (f" ({'≥' if sign > 0 else '≤'} {fmt_general(limit)})" if limit is not None else "")
        )
        if now is None or limit is None:
            continue
        if sign * (now - limit) < 0 and (
            was is None or sign * (now - was) < 0
        ):  # past its threshold and worse than before
            worse.append(figure)
    flipped = b.verdict == IdentityVerdict.PASS and c.verdict != IdentityVerdict.PASS
    if flipped or (c.verdict != IdentityVerdict.PASS and worse):
        status = Status.FAIL
    elif c.verdict != IdentityVerdict.PASS:
        status = (
            Status.INFO
        )  # failing in both runs and no worse: not a regression (identity's own exit code says it fails)
    else:
        status = Status.PASS
    not_gated = "failing in both runs and no worse: not a regression (identity's own exit code says it fails)"
    verdict = f"verdict {b.verdict} → {c.verdict}" + (
        f" ({'; '.join(map(str, c.failures))})" if c.verdict != IdentityVerdict.PASS else ""
    )
    note = f"; worse past threshold: {', '.join(worse)}" if worse and not flipped else ""
    return Check(
        CheckKind.IDENTITY,
        source,
        name,
        status,
        f"{name}: {verdict}; {', '.join(parts)}{note}",
        {
            "baseline_verdict": b.verdict,
            "current_verdict": c.verdict,
            "worse": worse,
            "dtype": c.dtype,
            **{f"baseline_{f}": as_number(getattr(b, f)) for f, _, _ in figures},
            **{f"current_{f}": as_number(getattr(c, f)) for f, _, _ in figures},
        },
        not_gated if status == Status.INFO else "",
    )
