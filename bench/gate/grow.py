"""Grow checks: two ladders (`ragbench grow`) compared rung by rung, per target (each mode is a target).

Rungs pair by target (`--match` for a renamed one) and the rung's planned size (the header's `rungs`; with
`--unit chunks` each run's measured size differs a little, its plan does not). Per pair: the p50 and p99 ratios,
p99 gated by `--max-query-p99-increase` (relative, as a served target's per-query p99), and each measure's drop
gated by `--max-drop` (default 0, as quality's means; its `--primary` family applies). Per target, always gated:
the first rung that breaks (a failed ingest, failed queries, over the SLO) moved earlier than the baseline's, or a
break where the baseline held. A rung measured in one run only, or failed in either, is said (info), not gated.
"""

from __future__ import annotations

from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.gate.figures import as_number, fmt_change, fmt_num
from bench.results.schema import GrowRungRecord, GrowSummaryRecord, RungStatus
from bench.results.store import Results

BREAK_RULE = "the first breaking rung may not come earlier than the baseline's"


def planned_size(results: Results, rung: GrowRungRecord) -> int:
    """The size the ladder planned for the rung (its measured size where the header has no plan)."""
    planned = (results.header.grow or {}).get("rungs") or []
    return int(planned[rung.rung - 1]) if 0 < rung.rung <= len(planned) else rung.size


def _info(name: str, source: str, why: str) -> Check:
    return Check(CheckKind.GROW, source, name, Status.INFO, f"{name}: not gated: {why}", not_gated=why)


def _ratio(was: float | None, now: float | None) -> float | None:
    return now / was if was and now is not None else None


def _quality(b: GrowRungRecord, c: GrowRungRecord, results: Results, config: GateConfig) -> tuple[list[str], bool]:
    """Each measure's drop in words, and whether one is past its allowance (`--max-drop`, its family)."""
    trec = {label: name for name, label in results.header.measure_labels.items()}
    said, worse = [], False
    for label in (m for m in b.metrics if m in c.metrics):
        was, now = as_number(b.metrics[label]), as_number(c.metrics[label])
        if was is None or now is None:
            continue
        measure = trec.get(label, label)
        gated = not config.not_gated(b.target, c.target, measure)
        limit = config.allowance(measure).limit(was)
        past = gated and was - now > limit + 1e-12
        worse |= past
        said.append(f"{label} {was:.3f} → {now:.3f}" + (f" (drop > {limit:.3f})" if past else ""))
    return said, worse


def rung_check(
    pair: tuple[GrowRungRecord, GrowRungRecord], cur: Results, config: GateConfig, name: str, source: str
) -> Check:
    """Both rungs measured: p50 and p99 ratios (p99 gated with the flag), quality drops (gated by --max-drop)."""
    b, c = pair
    p50 = as_number(b.latency_ms.get("p50")), as_number(c.latency_ms.get("p50"))
    p99 = as_number(b.latency_ms.get("p99")), as_number(c.latency_ms.get("p99"))
    change = p99[1] / p99[0] - 1 if p99[0] and p99[1] is not None else None
    limit = config.max_query_p99_increase
    slower = limit is not None and change is not None and change > limit.value
    quality, worse = _quality(b, c, cur, config)
    summary = (
        f"{name}: p50 {fmt_num(p50[0])} → {fmt_num(p50[1])} ms (×{fmt_num(_ratio(*p50), 3)}), p99 {fmt_num(p99[0])} "
        f"→ {fmt_num(p99[1])} ms ({fmt_change(change)}"
        + (f", max +{limit}" if limit is not None else ", not gated: no --max-query-p99-increase")
        + ")"
        + "".join(f", {q}" for q in quality)
    )
    figures: dict[str, str | int | float | dict[str, float] | None] = {
        "target": c.target,
        "baseline_target": b.target,
        "rung": c.rung,
        "baseline_p50_ms": p50[0],
        "current_p50_ms": p50[1],
        "p50_ratio": _ratio(*p50),
        "baseline_p99_ms": p99[0],
        "current_p99_ms": p99[1],
        "p99_ratio": _ratio(*p99),
        "max_query_p99_increase": str(limit) if limit is not None else None,
        "baseline_metrics": b.metrics,
        "current_metrics": c.metrics,
    }
    return Check(CheckKind.GROW, source, name, Status.FAIL if slower or worse else Status.PASS, summary, figures)


def _first_break(results: Results, summary: GrowSummaryRecord | None) -> tuple[int, str] | None:
    """The ladder index of a target's first breaking rung and why (None: it held at every rung measured)."""
    if summary is None or summary.first_break is None:
        return None
    rungs = [r for r in results.grow_rungs if r.target == summary.target and r.size == summary.first_break]
    index = min((r.rung for r in rungs), default=0)
    return index, f"rung {index} ({summary.first_break:,}): {summary.first_break_reason}"


def break_check(target: str, base: Results, cur: Results, config: GateConfig, source: str) -> Check:
    """A target's first breaking rung in both ladders: earlier now (or a break where none was) fails."""
    name = config.match.get(target, target)  # the target's name in the current ladder
    was = _first_break(base, next((s for s in base.grow_summaries if s.target == target), None))
    now = _first_break(cur, next((s for s in cur.grow_summaries if s.target == name), None))
    earlier = now is not None and (was is None or now[0] < was[0])
    summary = f"{name} first break: {_said(was)} → {_said(now)} ({BREAK_RULE})"
    figures = {
        "target": name,
        "baseline_target": target,
        "baseline_first_break_rung": was[0] if was else None,
        "current_first_break_rung": now[0] if now else None,
    }
    status = Status.FAIL if earlier else Status.PASS
    return Check(CheckKind.GROW, source, f"{name} first break", status, summary, figures)


def _said(found: tuple[int, str] | None) -> str:
    return found[1] if found else "none (held at every rung measured)"


def _notes(base: Results, cur: Results, where: str) -> list[str]:
    was, now = (base.header.grow or {}), (cur.header.grow or {})
    differs = [k for k in ("rungs", "unit", "distractors", "queries", "seed") if was.get(k) != now.get(k)]
    if not differs:
        return []
    return [f"{where}the ladders differ in {', '.join(differs)}: only rungs of the same planned size pair"]


def compare_grow(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """One check per (target, rung) of either ladder and one per target's first break; see the module docstring."""
    if not base.grow_rungs and not cur.grow_rungs:
        return [], []
    current = {(r.target, planned_size(cur, r)): r for r in cur.grow_rungs}
    matched: set[tuple[str, int]] = set()
    checks: list[Check] = []
    for b in base.grow_rungs:
        key = (config.match.get(b.target, b.target), planned_size(base, b))
        name = f"{key[0]} rung {b.rung} ({key[1]:,} {b.unit})"
        c = current.get(key)
        if c is None:
            checks.append(_info(name, source, "measured in the baseline ladder only"))
            continue
        matched.add(key)
        failed = [run for run, r in (("baseline", b), ("current", c)) if r.status == RungStatus.FAILED]
        if failed:
            checks.append(_info(name, source, f"its ingest failed in the {' and '.join(failed)} ladder"))
            continue
        checks.append(rung_check((b, c), cur, config, name, source))
    only_now = [k for k in current if k not in matched]
    checks += [_info(f"{t} rung ({size:,})", source, "measured in the current ladder only") for t, size in only_now]
    targets = dict.fromkeys(r.target for r in base.grow_rungs)
    checks += [break_check(t, base, cur, config, source) for t in targets]
    return checks, _notes(base, cur, f"{source}: " if source else "")
