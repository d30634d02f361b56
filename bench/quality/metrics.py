"""Retrieval measures with trec_eval's exact semantics, computed by trec_eval's own C code (pytrec_eval).

Why pytrec_eval and not ranx: it *is* trec_eval (ties by score then docno descending, raw-grade nDCG
gain, relevance level 1) and costs ~0.2 s per process; ranx costs ~10 s per process (numba) and orders
ties differently. ranx stays in the test suite as an independent cross-check.

>>> m = parse_measure("nDCG@10"); m.trec_name, m.label
('ndcg_cut_10', 'nDCG@10')
>>> scores = evaluate({"q": {"a": 1}}, {"q": {"a": 2.0, "b": 2.0}}, [parse_measure("recip_rank")])
>>> scores.means["recip_rank"]  # tie: trec_eval puts docno "b" before "a"
0.5
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NotRequired, TypedDict

import pytrec_eval

from bench.core.errors import UserError
from bench.datasets.model import Qrels
from bench.quality.runs import Run, trec_order

# trec_eval families ragbench accepts, and whether they take a cut-off parameter.
FAMILIES = {
    "ndcg": False,
    "ndcg_cut": True,
    "map": False,
    "map_cut": True,
    "recip_rank": False,
    "P": True,
    "recall": True,
    "success": True,
    "bpref": False,
    "Rprec": False,
}
# Answer-containment measures (bench/datasets/answers.py), scored on the texts a target returned, not by trec_eval.
ANSWER_FAMILIES = ("has_answer", "answer_recip_rank")  # both need a cut-off
# Scores of generated answers against the reference answers (quality --generate); no cut-off.
GENERATED_FAMILIES = ("exact_match", "f1", "contains_answer")
_LABELS = {
    "ndcg_cut": "nDCG",
    "ndcg": "nDCG",
    "recall": "R",
    "map_cut": "MAP",
    "map": "MAP",
    "recip_rank": "MRR",
    "P": "P",
    "success": "Success",
    "bpref": "bpref",
    "Rprec": "R-prec",
    "has_answer": "Answer",
    "answer_recip_rank": "AnswerMRR",
    "exact_match": "EM",
    "f1": "F1",
    "contains_answer": "Contains",
}
# Friendly names: label@k -> (family, whether the cut-off is a truncation of the run).
_FRIENDLY = {
    "ndcg": "ndcg_cut",
    "recall": "recall",
    "r": "recall",
    "map": "map_cut",
    "ap": "map_cut",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "p": "P",
    "precision": "P",
    "success": "success",
    "answer": "has_answer",
    "answermrr": "answer_recip_rank",
}


@dataclass(frozen=True)
class Measure:
    family: str  # trec_eval's measure family
    cutoff: int | None = None  # trec_eval's own parameter (ndcg_cut.10)
    truncate: int | None = None  # ragbench: evaluate the top-k of the run only (MRR@10 = recip_rank on top 10)

    @property
    def trec_name(self) -> str:
        """The name trec_eval prints; truncated measures get a `_cut_k` suffix trec_eval does not have."""
        if self.cutoff is not None:
            return f"{self.family}_{self.cutoff}"
        if self.truncate is not None:
            return f"{self.family}_cut_{self.truncate}"
        return self.family

    @property
    def answer_based(self) -> bool:
        """Scored against the reference answers (Answer@k, AnswerMRR@k, EM, F1, Contains), whatever the qrels."""
        return self.family in ANSWER_FAMILIES or self.generated

    @property
    def generated(self) -> bool:
        """Scores a generated answer (quality --generate), not a ranking."""
        return self.family in GENERATED_FAMILIES

    @property
    def label(self) -> str:
        k = self.cutoff or self.truncate
        return _LABELS[self.family] + (f"@{k}" if k else "")


MAX_CUTOFF = 1_000_000  # far beyond any ranking depth; larger values overflow trec_eval's parameter parsing


def _cutoff(text: str, k: str) -> int:
    """A cut-off from 1 to MAX_CUTOFF: trec_eval aborts the whole process (exit 134) on 0."""
    value = int(k)
    if not 1 <= value <= MAX_CUTOFF:
        raise UserError(f"measure {text!r}: the cut-off must be from 1 to {MAX_CUTOFF:,}")
    return value


def parse_measure(text: str) -> Measure:
    """trec_eval names (`ndcg_cut.10`, `ndcg_cut_10`, `P.10`, `recip_rank`) or labels (`nDCG@10`, `MRR@10`)."""
    name = text.strip()
    generated = {
        "em": "exact_match",
        "exact_match": "exact_match",
        "f1": "f1",
        "contains": "contains_answer",
        "contains_answer": "contains_answer",
    }.get(name.lower())
    if generated:
        return Measure(generated)
    if "@" in name:
        head, _, k = name.partition("@")
        family = _FRIENDLY.get(head.lower())
        if family is None or not re.fullmatch(r"\d+", k):
            raise UserError(
                f"measure {text!r}: unknown (try nDCG@10, R@100, MRR@10, MAP@100, P@10, Success@10, "
                "Answer@5, AnswerMRR@10, EM, F1, Contains)"
            )
        if family == "recip_rank":
            return Measure(family, truncate=_cutoff(text, k))
        return Measure(family, cutoff=_cutoff(text, k))
    match = re.fullmatch(r"([A-Za-z_]+?)(?:[._](\d+))?", name)
    if match and match.group(1) in ANSWER_FAMILIES:
        if match.group(2) is None:
            raise UserError(f"measure {text!r}: {match.group(1)} needs a cut-off of at least 1 ({match.group(1)}.5)")
        return Measure(match.group(1), cutoff=_cutoff(text, match.group(2)))
    if not match or match.group(1) not in FAMILIES:
        match = re.fullmatch(r"(recip_rank)_cut[._](\d+)", name)
        if match:
            return Measure("recip_rank", truncate=_cutoff(text, match.group(2)))
        raise UserError(
            f"measure {text!r}: unknown (known trec_eval measures: {', '.join(FAMILIES)}; "
            f"answer measures: {', '.join(ANSWER_FAMILIES)})"
        )
    family, k = match.group(1), match.group(2)
    if k is not None and not FAMILIES[family]:
        raise UserError(f"measure {text!r}: {family} takes no cut-off")
    if k is None and FAMILIES[family]:
        k = {"P": "10", "success": "10", "recall": "100", "ndcg_cut": "10", "map_cut": "100"}[family]
    return Measure(family, cutoff=_cutoff(text, k) if k is not None else None)


DEFAULT_MEASURES = ("nDCG@10", "R@100", "MRR@10", "MAP@100")
ANSWER_MEASURES = ("Answer@1", "Answer@5", "Answer@20", "AnswerMRR@10")
GENERATED_MEASURES = ("EM", "F1", "Contains")


def default_measures(has_qrels: bool, has_answers: bool, generating: bool = False) -> tuple[str, ...]:
    """The default measures follow what a set has: judgments, answers, or both side by side."""
    return (
        (DEFAULT_MEASURES if has_qrels else ())
        + (ANSWER_MEASURES if has_answers else ())
        + (GENERATED_MEASURES if generating else ())
    )


@dataclass
class Scores:
    """Per-query values and means, keyed by Measure.trec_name."""

    measures: list[Measure]
    per_query: dict[str, dict[str, float]]  # measure -> qid -> value
    means: dict[str, float]
    queries: list[str]  # the queries averaged over


def evaluate(qrels: Qrels, run: Run, measures: list[Measure], complete: bool = False) -> Scores:
    """Score `run` against `qrels` like `trec_eval -m ... [-c]`.

    Only queries present in both are averaged, unless `complete` (trec_eval -c): then every qrels
    query counts, a missing or empty one as zero for every measure ragbench offers.
    """
    evaluated = sorted(qid for qid in qrels if run.get(qid))
    targets = sorted(qrels) if complete else evaluated
    if not targets:
        raise UserError("no query has both judgments and results")
    per_query: dict[str, dict[str, float]] = {m.trec_name: dict.fromkeys(targets, 0.0) for m in measures}
    for depth in {m.truncate for m in measures}:
        group = [m for m in measures if m.truncate == depth]
        sub_run = run if depth is None else {qid: dict(trec_order(run[qid])[:depth]) for qid in evaluated}
        names = {m.family if m.cutoff is None else f"{m.family}.{m.cutoff}" for m in group}
        evaluator = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in evaluated}, names)
        for qid, values in evaluator.evaluate({q: sub_run[q] for q in evaluated}).items():
            for m in group:
                key = m.family if m.cutoff is None else f"{m.family}_{m.cutoff}"
                per_query[m.trec_name][qid] = values[key]
    means = {name: sum(values.values()) / len(targets) for name, values in per_query.items()}
    return Scores(measures=list(measures), per_query=per_query, means=means, queries=targets)


def format_trec(scores: Scores, per_query: bool = False) -> str:
    """trec_eval's three-column output: `measure<TAB>qid|all<TAB>value`."""
    lines = []
    if per_query:
        for qid in scores.queries:
            for m in scores.measures:
                if qid in scores.per_query[m.trec_name]:  # qrels and answer measures may cover different queries
                    lines.append(f"{m.trec_name:<22}\t{qid}\t{scores.per_query[m.trec_name][qid]:.4f}")
    for m in scores.measures:
        lines.append(f"{m.trec_name:<22}\tall\t{scores.means[m.trec_name]:.4f}")
    return "\n".join(lines)


class MeasureJson(TypedDict):
    """One measure in `evaluate --format json`: its label, its mean and (--per-query) each query's score."""

    label: str
    all: float
    per_query: NotRequired[dict[str, float]]


class ScoresJson(TypedDict):
    queries: int
    measures: dict[str, MeasureJson]  # trec name -> its scores


def scores_to_json(scores: Scores, per_query: bool = False) -> ScoresJson:
    measures: dict[str, MeasureJson] = {}
    for m in scores.measures:
        entry = MeasureJson(label=m.label, all=scores.means[m.trec_name])
        if per_query:
            entry["per_query"] = scores.per_query[m.trec_name]
        measures[m.trec_name] = entry
    return {"queries": len(scores.queries), "measures": measures}
