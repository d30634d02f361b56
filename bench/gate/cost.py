"""Cost checks of a quality run: per target, its ingest rate and per-query p99 against the baseline's.

Two figures of each target, gated like a load point's throughput and p99 (the same ratio and relative change,
the same flag grammar): the `ingest` cost block's texts/s (the corpus embedded through an endpoint; a higher
rate is better) and the per-query p99 latency (targets that answer one query at a time; embed + search +
rerank of a query). A figure absent from either run (no cost block, an ingest served wholly from the cache, a
target ranked in one batch) is not gated, and the check says which and why; a target with neither figure in
either run has no cost check unless a cost flag was given, then it is said not gated.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.gate.figures import as_number, fmt_change, fmt_num
from bench.results.schema import TargetRecord
from bench.results.store import Results


@dataclass(frozen=True)
class _Figure:
    """One gated cost figure of the two runs and why it is not gated (empty: it is)."""

    baseline: float | None
    current: float | None
    not_gated: str


def ingest_texts_per_s(target: TargetRecord) -> float | None:
    """The `ingest` cost block's texts/s; None without the block or when every text came from the cache."""
    return as_number(target.cost_block("ingest").get("texts_per_s"))


def query_p99_ms(target: TargetRecord) -> float | None:
    return as_number(target.latency_ms.get("p99"))


def _ingest(b: TargetRecord, c: TargetRecord, config: GateConfig) -> _Figure:
    was, now = ingest_texts_per_s(b), ingest_texts_per_s(c)
    reason = ""
    if config.min_ingest_ratio is None:
        reason = "no --min-ingest-ratio"
    elif was is None or now is None:
        reason = "; ".join(  # a block without a rate: nothing was sent, every text came from the cache
            ("every text came from the cache" if "ingest" in t.cost_blocks else "no ingest cost block")
            + f" in the {run} run"
            for run, t, v in (("baseline", b, was), ("current", c, now))
            if v is None
        )
    return _Figure(was, now, reason)


def _p99(b: TargetRecord, c: TargetRecord, config: GateConfig) -> _Figure:
    was, now = query_p99_ms(b), query_p99_ms(c)
    reason = ""
    if config.max_query_p99_increase is None:
        reason = "no --max-query-p99-increase"
    elif was is None or now is None:
        missing = [run for run, v in (("baseline", was), ("current", now)) if v is None]
        reason = "no per-query latency (ranked in one batch or failed) in the " + " and ".join(missing) + " run"
    return _Figure(was, now, reason)


def _cost_check(b: TargetRecord, c: TargetRecord, name: str, config: GateConfig, source: str) -> Check:
    ingest, p99 = _ingest(b, c, config), _p99(b, c, config)
    ratio = ingest.current / ingest.baseline if ingest.baseline and ingest.current is not None else None
    change = p99.current / p99.baseline - 1 if p99.baseline and p99.current is not None else None
    slower = not ingest.not_gated and ratio is not None and ratio < (config.min_ingest_ratio or 0.0)
    limit = config.max_query_p99_increase
    later = not p99.not_gated and change is not None and limit is not None and change > limit.value
    parts = (("ingest texts/s", ingest), ("query p99", p99))
    skipped = [f"{what} not gated: {f.not_gated}" for what, f in parts if f.not_gated]
    limits = []
    if config.min_ingest_ratio is not None:
        limits.append(f"min ingest ratio {config.min_ingest_ratio:g}")
    if limit is not None:
        limits.append(f"max query p99 +{limit}")
    summary = (
        f"{name} cost: ingest texts/s {fmt_num(ingest.baseline)} → {fmt_num(ingest.current)} (×{fmt_num(ratio, 3)}), "
        f"query p99 {fmt_num(p99.baseline)} → {fmt_num(p99.current)} ms "
        f"({fmt_change(change)})" + (f"; {', '.join(limits)}" if limits else "")
    )
    if skipped:
        summary += "; " + "; ".join(skipped)
    status = Status.FAIL if slower or later else Status.INFO if len(skipped) == 2 else Status.PASS
    figures = {
        "target": c.name,
        "baseline_target": b.name,
        "baseline_ingest_texts_per_s": ingest.baseline,
        "current_ingest_texts_per_s": ingest.current,
        "ingest_ratio": ratio,
        "min_ingest_ratio": config.min_ingest_ratio,
        "baseline_query_p99_ms": p99.baseline,
        "current_query_p99_ms": p99.current,
        "query_p99_change": change,
        "max_query_p99_increase": str(limit) if limit is not None else None,
        "not_gated": skipped,
    }
    return Check(
        CheckKind.COST,
        source,
        f"{name} cost",
        status,
        summary,
        figures,
        "; ".join(skipped) if status == Status.INFO else "",
    )


def _has_cost(t: TargetRecord) -> bool:
    return bool(t.cost_blocks) or query_p99_ms(t) is not None


def compare_cost(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """One cost check per target of both runs (matched by `--match`): its ingest rate and per-query p99."""
    gating = config.min_ingest_ratio is not None or config.max_query_p99_increase is not None
    current = {t.name: t for t in cur.targets}
    checks = []
    for b in base.targets:
        name = config.match.get(b.name, b.name)
        c = current.get(name)
        if c is None or not (gating or _has_cost(b) or _has_cost(c)):
            continue  # a missing target fails its quality checks; a target with nothing to say has no check
        shown = name if name == b.name else f"{b.name}→{name}"
        checks.append(_cost_check(b, c, shown, config, source))
    return checks, []
