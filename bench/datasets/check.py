"""What `ragbench datasets check` reports: counts, and soft problems that are shown but not fatal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from bench.datasets.answers import AnswerSet, CorpusAnswers
from bench.datasets.model import Dataset


@dataclass
class DatasetCheck:
    format: str
    split: str | None
    documents: int
    queries: int
    judged_queries: int
    judgments: int
    relevant_judgments: int
    grades: dict[int, int]
    answered_queries: int = 0
    answers: int = 0
    measures: dict[str, str] = field(default_factory=dict)  # relevance source -> the measures it supports
    # Soft problems: name -> count, with a few examples each.
    problems: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        rows = [
            f"format            {self.format}" + (f" (split {self.split})" if self.split else ""),
            f"documents         {self.documents}",
            f"queries           {self.queries} ({self.judged_queries} with judgments)",
            f"judgments         {self.judgments} ({self.relevant_judgments} relevant)",
            "grades            " + ", ".join(f"{g}: {n}" for g, n in sorted(self.grades.items())),
        ]
        if self.answered_queries:
            rows.append(
                f"answers           {self.answers} for {self.answered_queries} queries "
                f"({self.answers / self.answered_queries:.2f} per answered query)"
            )
        rows += [f"{source} measures".ljust(18) + supported for source, supported in self.measures.items()]
        for name, count in self.problems.items():
            examples = ", ".join(self.examples.get(name, []))
            rows.append(f"warning: {count} {name}" + (f" (e.g. {examples})" if examples else ""))
        return rows


def check_dataset(dataset: Dataset) -> DatasetCheck:
    judgments = [(qid, doc_id, rel) for qid, docs in dataset.qrels.items() for doc_id, rel in docs.items()]
    report = DatasetCheck(
        format=dataset.format,
        split=dataset.split,
        documents=len(dataset.corpus),
        queries=len(dataset.queries),
        judged_queries=len(dataset.judged_queries()),
        judgments=len(judgments),
        relevant_judgments=sum(1 for _, _, rel in judgments if rel > 0),
        grades=dict(Counter(rel for _, _, rel in judgments)),
        answered_queries=len(dataset.answered_queries()),
        answers=sum(len(a) for a in dataset.answers.values()),
        measures=supported_measures(dataset),
    )

    for name, items in _soft_problems(dataset, judgments):
        if items:
            report.problems[name] = len(items)
            report.examples[name] = items[:3]
    return report


def _soft_problems(dataset: Dataset, judgments: list[tuple[str, str, int]]) -> Iterator[tuple[str, list[str]]]:
    """(problem, the ids it concerns) for every soft problem, in the order they are shown; empty when absent."""
    if dataset.corpus:
        yield (
            "judged documents missing from the corpus",
            sorted({doc_id for _, doc_id, _ in judgments if doc_id not in dataset.corpus}),
        )
        texts = Counter(doc.full_text for doc in dataset.corpus.values())
        yield (
            "documents whose text repeats another's",
            [d.doc_id for d in dataset.corpus.values() if texts[d.full_text] > 1],
        )
        yield "empty documents", [d.doc_id for d in dataset.corpus.values() if not d.full_text.strip()]
    else:
        yield "corpus absent (evaluation only)", ["no corpus file"]
    yield (
        "judged queries without any relevant document",
        [qid for qid, docs in dataset.qrels.items() if not any(rel > 0 for rel in docs.values())],
    )
    if dataset.answers and dataset.corpus:
        index = CorpusAnswers({doc_id: doc.text for doc_id, doc in dataset.corpus.items()})
        yield (
            "queries whose answers occur in no document (DPR has_answer, titles excluded)",
            [qid for qid in dataset.answered_queries() if not index.documents_with(AnswerSet.of(dataset.answers[qid]))],
        )
    if dataset.qrels:
        yield (
            "queries without judgments "
            + ("(scored by answer measures only)" if dataset.answers else "(not evaluated)"),
            [qid for qid in dataset.queries if qid not in dataset.qrels],
        )
    if dataset.answers:
        yield (
            "queries without answers " + ("(scored by qrels measures only)" if dataset.qrels else "(not evaluated)"),
            [qid for qid in dataset.queries if not dataset.answers.get(qid)],
        )
    yield "empty queries", [qid for qid, text in dataset.queries.items() if not text.strip()]


def supported_measures(dataset: Dataset) -> dict[str, str]:
    """Relevance source -> the measures the set supports with it (what `quality -m` accepts)."""
    ranking = "nDCG@k, R@k, MAP@k, MRR@k, P@k, Success@k, bpref, R-prec"
    supported = {}
    if dataset.qrels:
        supported["qrels"] = ranking
    if dataset.answers:
        derived = "" if dataset.qrels else f"; {ranking} on answer-derived relevance"
        supported["answers"] = f"Answer@k, AnswerMRR@k{derived}; EM, F1, Contains with --generate"
    return supported
