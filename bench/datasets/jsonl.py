"""Plain JSONL Q&A: `{"id", "query", "relevant"?: {doc_id: grade}, "answers"?: [...]}` per line, plus a corpus file."""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.beir import load_corpus_jsonl
from bench.datasets.io import check_id, find_file, optional_answers, parse_grade, read_jsonl, require_id, require_str
from bench.datasets.model import Dataset, DatasetFormat, Qrels

QA_NAMES = ("qa.jsonl", "queries.jsonl")


def load_qa(path: Path) -> tuple[dict[str, str], Qrels, dict[str, list[str]]]:
    """Queries, judgments and reference answers; each line needs `relevant` or `answers` (or both)."""
    queries: dict[str, str] = {}
    qrels: Qrels = {}
    answers: dict[str, list[str]] = {}
    for line, record in read_jsonl(path):
        qid = require_id(record, "id", "query id", path, line)
        if qid in queries:
            raise InputError(path, f"duplicate query id {qid!r}", line)
        queries[qid] = require_str(record, "query", path, line)
        found = optional_answers(record, path, line)
        if found:
            answers[qid] = found
        relevant = record.get("relevant")
        if relevant is None:
            if found is None:
                raise InputError(path, "missing field 'relevant' or 'answers'", line)
            continue
        if isinstance(relevant, list):  # a plain list of ids means binary relevance
            pairs = [(doc_id, 1) for doc_id in relevant]
        elif isinstance(relevant, dict):
            pairs = list(relevant.items())
        else:
            raise InputError(path, "field 'relevant' must be an object {doc_id: grade}", line)
        grades: dict[str, int] = {}
        for doc_id, grade in pairs:
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                raise InputError(path, f"document id {doc_id!r} in 'relevant' must be a string", line)
            if isinstance(grade, str):  # a grade is a JSON number, not text
                raise InputError(path, f"grade of {doc_id!r} must be an integer", line)
            grades[check_id(str(doc_id), "document id", path, line)] = parse_grade(grade, path, line)
        if grades:
            qrels[qid] = grades
    return queries, qrels, answers


def qa_file(path: Path) -> Path | None:
    """The Q&A file for `path` (the file itself, or one of QA_NAMES inside a folder)."""
    if path.is_file():
        return path
    for name in QA_NAMES:
        found = find_file(path, name)
        if found is not None:
            return found
    return None


def load_jsonl_qa(path: Path) -> Dataset:
    qa_path = qa_file(path)
    if qa_path is None:
        raise InputError(path, f"no Q&A file ({' or '.join(QA_NAMES)})")
    directory = qa_path.parent
    corpus_path = find_file(directory, "corpus.jsonl")
    if corpus_path is None:
        raise InputError(directory / "corpus.jsonl", "missing corpus file beside the Q&A file")
    queries, qrels, answers = load_qa(qa_path)
    return Dataset(
        name=directory.name if path.is_dir() else qa_path.name.split(".")[0],
        corpus=load_corpus_jsonl(corpus_path),
        queries=queries,
        qrels=qrels,
        source=str(path),
        format=DatasetFormat.JSONL,
        files={"corpus": corpus_path, "queries": qa_path, "qrels": qa_path},
        answers=answers,
    )
