"""The answer a quality run was asked for, in a few lines: on the first measure, the best target and what it beats
with significance after Holm, which targets are not different, and each reranked target against its own first stage.

The console, report.md and report.html open with these lines; the tables below them are what they rest on."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.quality.under_load import split_loaded_name
from bench.report.quality_tables import SIGNIFICANCE_LEVEL, reranked_names
from bench.results.schema import ComparisonRecord, MetricRecord
from bench.results.store import Results


@dataclass(frozen=True)
class Difference:
    """`better` minus `worse` on one measure, oriented so the difference is the first one's gain."""

    better: str
    worse: str
    diff: float
    ci_low: float
    ci_high: float
    p_holm: float

    @property
    def significant(self) -> bool:
        return self.p_holm < SIGNIFICANCE_LEVEL

    def gain(self) -> str:
        """ "+0.028 over bm25 [+0.009, +0.046], significant after Holm"; a loss: "-0.207 against bm25 [...]"."""
        verdict = "significant after Holm" if self.significant else "not significant after Holm"
        against = "over" if self.diff >= 0 else "against"  # a loss is not a gain "over" the other
        return f"{self.diff:+.3f} {against} {self.worse} [{self.ci_low:+.3f}, {self.ci_high:+.3f}], {verdict}"


def difference(results: Results, measure: str, better: str, worse: str) -> Difference | None:
    """The paired comparison of two targets on `measure`, as `better` − `worse`; None where it was not tested."""
    for c in results.comparisons:
        if c.measure == measure and {c.a, c.b} == {better, worse}:
            return _oriented(c, better)
    return None


def _oriented(c: ComparisonRecord, better: str) -> Difference:
    if c.b == better:  # the record holds b − a
        return Difference(c.b, c.a, c.mean_diff, c.ci_low, c.ci_high, c.p_randomization_holm)
    return Difference(c.a, c.b, -c.mean_diff, -c.ci_high, -c.ci_low, c.p_randomization_holm)


def _idle(name: str) -> bool:
    """A target ranked without background load (`NAME@bg0`, or no --background at all)."""
    loaded = split_loaded_name(name)
    return loaded is None or loaded[1] == 0


def answer_lines(results: Results) -> list[str]:
    """The answer on the run's first measure: the best first stage and its gain over each other one (significant
    after Holm or not), the others in order where they differ or not, then each `X+rerank` against `X`."""
    if not results.header.measures:
        return []
    measure = results.header.measures[0]
    label = results.header.measure_labels.get(measure, measure)
    reranked = reranked_names(results)
    rerank_names = {r for _, r in reranked}
    found = [m for t in results.targets if (m := results.metric(t.name, measure)) is not None]
    firsts = sorted((m for m in found if m.target not in rerank_names and _idle(m.target)), key=lambda m: -m.mean)
    if not firsts:
        return []
    lines = [_best_line(results, measure, label, firsts)]
    lines += _rerank_lines(results, measure, label, reranked)
    return lines


# The line shows differences to 3 decimals: a "best" whose margin rounds to 0.000 (or below) beats nothing it can show
SHOWN_MARGIN = 0.0005


def _ties_with(results: Results, measure: str, best: MetricRecord, other: MetricRecord) -> bool:
    """Whether `best` fails to beat `other` by a margin the line can show (the paired difference where tested)."""
    d = difference(results, measure, best.target, other.target)
    margin = d.diff if d is not None else best.mean - other.mean
    return margin < SHOWN_MARGIN


def _tie_line(results: Results, measure: str, label: str, tied: list[MetricRecord], rest: list[MetricRecord]) -> str:
    """ "bm25 and hybrid tie on nDCG@10 (0.943)", then the tied group's first against each target below it."""
    names = [m.target for m in tied]
    group = ", ".join(names[:-1]) + f" and {names[-1]}"
    line = f"{group} tie on {label} ({tied[0].mean:.3f})"
    within = [d for m in tied[1:] if (d := difference(results, measure, tied[0].target, m.target)) is not None]
    # Many queries can make a difference under the line's precision significant: said, not hidden by "tie"
    line += "".join(
        f"; {d.better} {d.diff:+.4f} {'over' if d.diff >= 0 else 'against'} {d.worse}, significant after Holm"
        for d in within
        if d.significant
    )
    found = [difference(results, measure, tied[0].target, other.target) for other in rest]
    gains = [f"{tied[0].target} {d.gain()}" if d else f"not tested against {o.target}" for d, o in zip(found, rest)]
    if gains:
        line += "; " + "; ".join(gains)
    if not any(d.significant for d in [*within, *(d for d in found if d is not None)]):
        line += "; no target is significantly better"
    return line


def _best_line(results: Results, measure: str, label: str, ranked: list[MetricRecord]) -> str:
    best, rest = ranked[0], ranked[1:]
    head = f"{best.target}: {label} {best.mean:.3f}"
    if not rest:
        return f"{head} [{best.ci_low:.3f}, {best.ci_high:.3f}] (one target: nothing to compare)"
    tied = [best, *itertools.takewhile(lambda m: _ties_with(results, measure, best, m), rest)]
    if len(tied) > 1:  # a winner must beat the others by a positive margin: otherwise the line says they tie
        return _tie_line(results, measure, label, tied, rest[len(tied) - 1 :])
    found = [difference(results, measure, best.target, other.target) for other in rest]
    gains = [d.gain() if d else f"not tested against {o.target}" for d, o in zip(found, rest)]
    clauses = [f"{head}, " + "; ".join(gains)]
    if not any(d is not None and d.significant for d in found):
        clauses[0] += f"; no significant winner on {label}"
        return clauses[0]
    for upper, lower in itertools.pairwise(rest):  # the others in order: only neighbours, so n targets give n clauses
        d = difference(results, measure, upper.target, lower.target)
        if d is not None and d.significant:
            clauses.append(f"{upper.target} better than {lower.target} ({d.diff:+.3f}, significant after Holm)")
        elif d is not None:
            clauses.append(f"{upper.target} not different from {lower.target}")
    return "; ".join(clauses)


def _rerank_lines(results: Results, measure: str, label: str, reranked: list[tuple[str, str]]) -> list[str]:
    lines = []
    for first, rerank in reranked:
        after = results.metric(rerank, measure)
        d = difference(results, measure, rerank, first)
        if after is None or d is None:
            continue
        if d.significant:
            better = "better than" if d.diff > 0 else "worse than"
            lines.append(f"{rerank}: {label} {after.mean:.3f}, {better} its first stage: {d.gain()}")
        else:
            lines.append(f"{rerank}: {label} {after.mean:.3f}, not different from its first stage: {d.gain()}")
    return lines


def answer_heading(results: Results) -> str:
    """What the answer lines answer, in one line."""
    measure = results.header.measures[0] if results.header.measures else ""
    label = results.header.measure_labels.get(measure, measure)
    test = f"paired randomization test, Holm-corrected, at {SIGNIFICANCE_LEVEL}"
    return f"Answer on {label} (gain [95% interval]; {test})"
