"""Evaluate files as trec_eval does: read qrels and run, score, done.

In place of a qrels file, a dataset (folder, or JSONL Q&A file) gives its qrels and, where it has
reference answers, the answer measures: scored on the texts of the run's documents in trec_eval's order.
"""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.answers import AnswerJudge
from bench.datasets.beir import load_qrels_tsv
from bench.datasets.io import read_lines, require_file
from bench.datasets.model import Dataset, Qrels
from bench.datasets.trec import load_trec_qrels
from bench.quality.metrics import Measure, Scores, evaluate, parse_measure
from bench.quality.runs import Run, read_run, trec_order


def read_qrels(path: Path) -> Qrels:
    """TREC qrels (4 columns) or a BEIR qrels TSV (3 columns, header), told apart by the first line."""
    require_file(path, "qrels file")
    first = next(read_lines(path), None)
    if first is None:
        raise InputError(path, "empty qrels file")
    if len(first[1].split()) == 4:
        return load_trec_qrels(path)
    return load_qrels_tsv(path)


def evaluate_files(qrels_path: Path, run_path: Path, measures: list[str], complete: bool) -> Scores:
    parsed = [parse_measure(m) for m in measures]
    if qrels_path.is_dir() or qrels_path.name.endswith((".jsonl", ".jsonl.gz")):
        from bench.datasets import load_dataset

        return evaluate_dataset(load_dataset(qrels_path), read_run(run_path), parsed, complete, run_path)
    answer_based = next((m for m in parsed if m.answer_based), None)
    if answer_based is not None:
        raise InputError(
            qrels_path,
            f"{answer_based.label} needs reference answers: give a dataset with answers "
            "(folder or qa.jsonl) in place of the qrels file",
        )
    return evaluate(read_qrels(qrels_path), read_run(run_path), parsed, complete)


def ranked_texts(
    dataset: Dataset, run: Run, qids: list[str], depth: int, run_path: Path | None = None
) -> dict[str, list[str]]:
    """qid -> the texts (title excluded) of its top `depth` documents, in trec_eval's order."""
    texts = {}
    for qid in qids:
        ranked = [doc_id for doc_id, _ in trec_order(run.get(qid, {}))[:depth]]
        missing = next((d for d in ranked if d not in dataset.corpus), None)
        if missing is not None:
            raise InputError(
                run_path or "run", f"document {missing!r} (query {qid!r}) is not in the corpus of {dataset.source}"
            )
        texts[qid] = [dataset.corpus[d].text for d in ranked]
    return texts


def evaluate_dataset(
    dataset: Dataset, run: Run, measures: list[Measure], complete: bool, run_path: Path | None = None
) -> Scores:
    """Qrels measures on the set's qrels (answer-derived judgments without them), answer measures on its answers;
    without `complete`, each averages over its queries that the run holds (as trec_eval)."""
    generated = next((m for m in measures if m.generated), None)
    if generated is not None:
        raise InputError(
            run_path or "run", f"{generated.label} scores generated answers, which a run file does not hold"
        )
    answer_measures = [m for m in measures if m.answer_based]
    if answer_measures and not dataset.answers:
        raise InputError(dataset.source, f"{answer_measures[0].label} needs reference answers; this set has none")
    ranking = [m for m in measures if not m.answer_based]
    scores = evaluate(dataset.qrels or dataset.answer_qrels(), run, ranking, complete) if ranking else None
    per_query = dict(scores.per_query) if scores else {}
    queries = list(scores.queries) if scores else []
    if answer_measures:
        judge = AnswerJudge(dataset.answers)
        answered = sorted(judge.sets) if complete else sorted(q for q in judge.sets if run.get(q))
        if not answered:
            raise InputError(run_path or "run", "no query has both answers and results")
        judge.judge("run", ranked_texts(dataset, run, answered, max(m.cutoff or 0 for m in answer_measures), run_path))
        for m in answer_measures:
            values = judge.scores("run", m.family, m.cutoff)
            per_query[m.trec_name] = {qid: values[qid] for qid in answered}
        queries = sorted(set(queries) | set(answered))
    means = {name: sum(values.values()) / len(values) for name, values in per_query.items()}
    return Scores(measures=list(measures), per_query=per_query, means=means, queries=queries)
