"""Quality checks: per target and measure, a paired randomization test on the queries both runs judged.

A check fails only when the drop exceeds its allowance AND the test finds it significant, Holm-corrected
across the family of a results file: its *gated* checks (the measures with a `--max-drop`, or those
`--primary` names, on targets of both runs; a check outside it is reported, not gated). A drop past its
allowance that is significant alone but not across the family is inconclusive (`--inconclusive`). Every
check carries its figures (effect, bootstrap interval, p, the smallest drop its queries could detect) so a
person can see why it passed or failed and what a pass could not see.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.core.errors import InputError
from bench.core.pvalues import fmt_p
from bench.gate.checks import Check, CheckKind, Status
from bench.gate.config import GateConfig
from bench.quality.scoring import over_documents
from bench.quality.significance import bootstrap_cis, detectable_drop, holm, randomization_tests, seeded_generator
from bench.quality.under_load import not_under_load
from bench.results.store import Results

POWER = 0.8  # a quality check states the smallest drop it finds with this probability


def compare_quality(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Per target name and measure: the paired randomization test on the queries both runs judged."""
    run = _QualityRuns(base, cur, config, source)
    measures = [m for m in base.header.measures if m in cur.header.measures]
    notes = _quality_notes(run, measures)
    base_targets = list(dict.fromkeys(r.target for r in base.metrics))
    matched = {config.match.get(b, b) for b in base_targets}
    for name in sorted({r.target for r in cur.metrics} - matched):
        notes.append(f"{run.where}target {name} is new in the current run: nothing to compare it with")
    checks: list[Check] = []
    tested: list[Check] = []  # checks with a p-value, for Holm
    unloaded = not_under_load(base), not_under_load(cur)
    for base_name in base_targets:
        cur_name = config.match.get(base_name, base_name)
        if base_name in unloaded[0] or cur_name in unloaded[1]:
            checks += [_not_under_load(run, base_name, cur_name, m, unloaded) for m in measures]
            continue
        by_queries = _judged_queries(run, base_name, cur_name, measures, checks, notes)
        for qids, group in by_queries.items():
            judged = _tested(run, base_name, cur_name, group, qids)
            checks += judged
            tested += judged
    _judge_quality(tested, config)
    return checks, notes


@dataclass
class _QualityRuns:
    """The two quality runs compared, with what every check of them reads."""

    base: Results
    cur: Results
    config: GateConfig
    source: str

    def __post_init__(self) -> None:
        self.where = f"{self.source}: " if self.source else ""
        self.labels = {**self.base.header.measure_labels, **self.cur.header.measure_labels}
        self.base_scores = {(r.target, r.measure): r.per_query for r in self.base.metrics}
        self.cur_scores = {(r.target, r.measure): r.per_query for r in self.cur.metrics}
        # A measure whose cut-off is past the target's ranking: "over N documents" (MetricRecord.ranked).
        self.base_ranked = {(r.target, r.measure): r.ranked for r in self.base.metrics}
        self.cur_ranked = {(r.target, r.measure): r.ranked for r in self.cur.metrics}

    def name(self, base_name: str, cur_name: str, measure: str) -> str:
        shown = cur_name if cur_name == base_name else f"{base_name}→{cur_name}"
        ranked = self.cur_ranked.get((cur_name, measure))
        over = (
            f" {over_documents(ranked)}"
            if ranked is not None and self.lengths_differ(base_name, cur_name, measure) is None
            else ""
        )
        return f"{shown} {self.labels.get(measure, measure)}{over}"

    def lengths_differ(self, base_name: str, cur_name: str, measure: str) -> str | None:
        """Why the two rankings' lengths below the measure's cut-off differ, or None: a measure over 10 documents
        and the same over 100 measure the cut, not the targets, so such a pair is not tested."""
        was, now = self.base_ranked.get((base_name, measure)), self.cur_ranked.get((cur_name, measure))
        if was == now:
            return None
        label = self.labels.get(measure, measure)

        def over(n: int | None) -> str:
            return "over its full ranking" if n is None else over_documents(n)

        return f"{label} {over(was)} in the baseline, {over(now)} now: rankings of different lengths below the cut-off"


def _quality_notes(run: _QualityRuns, measures: list[str]) -> list[str]:
    """What changed between the runs beside the scores: the dataset, the measures, where relevance comes from."""
    where, notes = run.where, []
    bdata, cdata = run.base.header.dataset_info, run.cur.header.dataset_info
    if bdata.fingerprint != cdata.fingerprint:
        notes.append(
            f"{where}DATASET CHANGED: baseline {bdata.name} (fingerprint {bdata.fingerprint}, "
            f"{bdata.documents} documents, {bdata.queries} queries), current {cdata.name} "
            f"(fingerprint {cdata.fingerprint}, {cdata.documents} documents, "
            f"{cdata.queries} queries): scores are compared on the queries both judged, over different data"
        )
    for m in sorted(set(run.base.header.measures) ^ set(run.cur.header.measures)):
        notes.append(f"{where}measure {m} is in only one run: not compared")
    for m in measures:
        was, now = run.base.header.measure_relevance.get(m), run.cur.header.measure_relevance.get(m)
        if was and now and was != now:
            notes.append(f"{where}RELEVANCE CHANGED for {m}: judged by {was} in the baseline, by {now} now")
    return notes


def _not_under_load(
    run: _QualityRuns, base_name: str, cur_name: str, measure: str, unloaded: tuple[dict[str, str], dict[str, str]]
) -> Check:
    """A `quality --background` run whose stream failed is not a loaded measurement: never gated as one. The
    current run's fails its check (what it is named was not measured), the baseline's alone leaves it ungated."""
    name = run.name(base_name, cur_name, measure)
    if cur_name in unloaded[1]:
        return Check(
            CheckKind.QUALITY,
            run.source,
            name,
            Status.FAIL,
            f"{name}: not measured under load ({unloaded[1][cur_name]})",
        )
    why = f"the baseline's {base_name} is not measured under load ({unloaded[0][base_name]})"
    return Check(CheckKind.QUALITY, run.source, name, Status.INFO, f"{name}: not gated: {why}", not_gated=why)


def _judged_queries(
    run: _QualityRuns,
    base_name: str,
    cur_name: str,
    measures: list[str],
    checks: list[Check],
    notes: list[str],
) -> dict[tuple[str, ...], list[str]]:
    """The queries both runs judged, per measure (measures judged on the same queries share draws); a measure
    with none fails its check (appended to `checks`), one judged on different queries gets a note."""
    by_queries: dict[tuple[str, ...], list[str]] = {}
    for measure in measures:
        name = run.name(base_name, cur_name, measure)
        b, c = run.base_scores.get((base_name, measure)), run.cur_scores.get((cur_name, measure))
        if b is None:
            continue
        if c is None:
            summary = f"{name}: no scores in the current run (target failed or missing)"
            checks.append(Check(CheckKind.QUALITY, run.source, name, Status.FAIL, summary))
            continue
        differ = run.lengths_differ(base_name, cur_name, measure)
        if differ is not None:
            why = f"not tested: {differ}"
            checks.append(Check(CheckKind.QUALITY, run.source, name, Status.INFO, f"{name}: {why}", not_gated=why))
            continue
        qids = tuple(sorted(set(b) & set(c)))
        if len(qids) != len(b) or len(qids) != len(c):
            notes.append(
                f"{run.where}{name}: {len(b) - len(qids)} baseline and {len(c) - len(qids)} current "
                f"queries are judged in one run only; compared on the {len(qids)} both judged"
            )
        if not qids:
            checks.append(
                Check(CheckKind.QUALITY, run.source, name, Status.FAIL, f"{name}: no query judged in both runs")
            )
            continue
        by_queries.setdefault(qids, []).append(measure)
    return by_queries


def _tested(run: _QualityRuns, base_name: str, cur_name: str, group: list[str], qids: tuple[str, ...]) -> list[Check]:
    """One check per measure of `group` with its effect, bootstrap interval and randomization p (not yet judged)."""
    config = run.config
    vb = _score_matrix(run.base, run.base_scores, base_name, group, qids)
    vc = _score_matrix(run.cur, run.cur_scores, cur_name, group, qids)
    diffs = vc - vb
    # Seeded by the pair's names: a check's figures do not depend on which other targets ran.
    rng = seeded_generator(config.seed, base_name, cur_name)
    lows, highs = bootstrap_cis(diffs, config.bootstrap, rng)
    pvalues = randomization_tests(diffs, config.permutations, rng)
    checks = []
    for j, measure in enumerate(group):
        allowance, baseline_mean = config.allowance(measure), float(vb[:, j].mean())
        figures = {
            "target": cur_name,
            "baseline_target": base_name,
            "measure": measure,
            "label": run.labels.get(measure, measure),
            "n": len(qids),
            "baseline": baseline_mean,
            "current": float(vc[:, j].mean()),
            "effect": float(diffs[:, j].mean()),
            "ci_low": float(lows[j]),
            "ci_high": float(highs[j]),
            "ci_level": 0.95,
            "ci_adjusted": False,  # the check's own interval; the verdict is on the family's adjusted p
            "sd_diff": float(diffs[:, j].std(ddof=1)) if len(qids) > 1 else None,
            "p": float(pvalues[j]),
            "max_drop": str(allowance),
            "limit": allowance.limit(baseline_mean),
            "alpha": config.alpha,
        }
        name = run.name(base_name, cur_name, measure)
        not_gated = config.not_gated(base_name, cur_name, measure)
        checks.append(
            Check(
                CheckKind.QUALITY, run.source, name, Status.INFO if not_gated else Status.PASS, "", figures, not_gated
            )
        )
    return checks


def _judge_quality(tested: list[Check], config: GateConfig) -> None:
    """Holm over the family (the gated checks); a gated check fails when its drop is past the allowance and
    significant after the correction, and is inconclusive when that drop is significant only alone (its own
    p at most alpha, or its interval excluding 0). A check outside the family is reported, not gated."""
    family = [c for c in tested if not c.not_gated]
    for check, p_holm in zip(family, holm([c.figures["p"] for c in family])):
        f = check.figures
        f["p_holm"] = p_holm
        f["significant"] = p_holm <= config.alpha
        dropped = -f["effect"] > f["limit"]
        alone = f["p"] <= config.alpha or f["ci_high"] < 0
        if dropped and (f["significant"] or not config.significance):
            check.status = Status.FAIL
        elif dropped and alone:  # a drop the family's correction can neither show nor rule out: never a pass
            check.status = config.inconclusive.status
            check.inconclusive = (
                f"INCONCLUSIVE, counted as {config.inconclusive} (--inconclusive {config.inconclusive})"
            )
    for check in tested:
        f = check.figures
        if check.not_gated:
            f["p_holm"] = f["significant"] = None  # outside the family: no corrected p, no verdict
        f["family"] = len(family)
        # The level a check is tested at when the rest of its family is unchanged: Holm's first step, alpha/m.
        f["mde_alpha"] = config.alpha / len(family) if not check.not_gated else config.alpha
        f["power"] = POWER
        f["mde"] = detectable_drop(f["sd_diff"], f["n"], f["mde_alpha"], POWER)
        check.summary = _quality_summary(check, config)


def _quality_summary(check: Check, config: GateConfig) -> str:
    f = check.figures
    head = (
        f"{check.name}: {f['baseline']:.4f} → {f['current']:.4f}, effect {f['effect']:+.4f} "
        f"[{f['ci_low']:+.4f}, {f['ci_high']:+.4f}] (95%, unadjusted), p {fmt_p(f['p'])}"
    )
    mde = "–" if f["mde"] is None else f"{f['mde']:.4f}"
    power = f"n {f['n']}, detects a drop ≥ {mde} ({POWER:.0%} power at alpha {f['mde_alpha']:.3g})"
    if check.not_gated:
        return f"{head}, {power}; not gated: {check.not_gated}"
    gate = f"max drop {f['max_drop']}" + (
        f", alpha {config.alpha:g} (Holm over {f['family']} gated check{'s' if f['family'] != 1 else ''})"
        if config.significance
        else ", significance off"
    )
    summary = f"{head} (Holm {fmt_p(f['p_holm'])}), {power}; {gate}"
    if check.inconclusive:
        summary += (
            f"; {check.inconclusive}: the drop is past its allowance and significant alone, not after Holm "
            f"over the {f['family']} gated checks (fewer with --primary, or more queries, would decide it)"
        )
    return summary


def _score_matrix(
    results: Results,
    scores: dict[tuple[str, str], dict[str, float]],
    target: str,
    measures: list[str],
    qids: tuple[str, ...],
) -> np.ndarray:
    """Per-query scores, queries x measures; a missing (null) or infinite score is an input error, never a NaN
    that would pass every check."""
    matrix = np.array([[scores[target, m][q] for m in measures] for q in qids], dtype=np.float64)
    if not np.isfinite(matrix).all():
        row, col = np.argwhere(~np.isfinite(matrix))[0]
        raise InputError(
            results.path,
            f"metrics record of {target} {measures[col]}: the score of query {qids[row]!r} is not a finite number",
        )
    return matrix
