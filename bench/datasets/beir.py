"""BEIR layout: corpus.jsonl[.gz], queries.jsonl[.gz], qrels/<split>.tsv (with a header line)."""

from __future__ import annotations

from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.io import (
    check_id,
    find_file,
    optional_answers,
    parse_grade,
    read_jsonl,
    read_lines,
    require_id,
    require_str,
)
from bench.datasets.model import Dataset, DatasetFormat, Document, Qrels


def load_corpus_jsonl(path: Path) -> dict[str, Document]:
    """`{"_id", "title"?, "text"}` per line (`id` is accepted for `_id`)."""
    corpus: dict[str, Document] = {}
    for line, record in read_jsonl(path):
        doc_id = require_id(record, "_id" if "_id" in record else "id", "document id", path, line)
        if doc_id in corpus:
            raise InputError(path, f"duplicate document id {doc_id!r}", line)
        text = record.get("text")
        if not isinstance(text, str):
            raise InputError(path, "missing field 'text'" if text is None else "field 'text' must be a string", line)
        title = record.get("title") or ""
        if not isinstance(title, str):
            raise InputError(path, "field 'title' must be a string", line)
        corpus[doc_id] = Document(doc_id, title, text)
    return corpus


def load_queries_jsonl(path: Path) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Queries, and the reference answers of those that carry an `answers` list."""
    queries: dict[str, str] = {}
    answers: dict[str, list[str]] = {}
    for line, record in read_jsonl(path):
        qid = require_id(record, "_id", "query id", path, line)
        if qid in queries:
            raise InputError(path, f"duplicate query id {qid!r}", line)
        queries[qid] = require_str(record, "text", path, line)
        found = optional_answers(record, path, line)
        if found:
            answers[qid] = found
    return queries, answers


def load_qrels_tsv(path: Path) -> Qrels:
    """`query-id<TAB>corpus-id<TAB>score` after one header line."""
    qrels: Qrels = {}
    lines = read_lines(path)
    first = next(lines, None)
    if first is None:
        raise InputError(path, "empty qrels file")
    number, header = first
    columns = header.split("\t")
    if len(columns) < 3 or _is_number(columns[2].strip()):
        raise InputError(path, "missing header line (expected 'query-id<TAB>corpus-id<TAB>score')", number)
    for number, text in lines:
        fields = text.split("\t")
        if len(fields) != 3:
            raise InputError(path, f"expected 3 tab-separated columns, found {len(fields)}", number)
        qid, doc_id, grade = (f.strip() for f in fields)
        check_id(qid, "query id", path, number)
        check_id(doc_id, "document id", path, number)
        judged = qrels.setdefault(qid, {})
        if doc_id in judged:
            raise InputError(path, f"duplicate judgment for query {qid!r}, document {doc_id!r}", number)
        judged[doc_id] = parse_grade(grade, path, number)
    return qrels


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def qrels_splits(directory: Path) -> list[str]:
    qrels_dir = directory / "qrels"
    names = [p.name for p in qrels_dir.iterdir() if p.is_file()] if qrels_dir.is_dir() else []
    return sorted({n.removesuffix(".gz").removesuffix(".tsv") for n in names if n.endswith((".tsv", ".tsv.gz"))})


def choose_split(directory: Path, split: str | None) -> str:
    splits = qrels_splits(directory)
    if not splits:
        raise InputError(directory / "qrels", "no qrels/<split>.tsv file")
    if split is None:
        if "test" in splits:
            return "test"
        if len(splits) == 1:
            return splits[0]
        raise InputError(directory / "qrels", f"several splits ({', '.join(splits)}): choose one with --split")
    if split not in splits:
        raise InputError(
            directory / "qrels" / f"{split}.tsv", f"split {split!r} not found (available: {', '.join(splits)})"
        )
    return split


def load_beir(directory: Path, split: str | None = None) -> Dataset:
    corpus_path = find_file(directory, "corpus.jsonl")
    queries_path = find_file(directory, "queries.jsonl")
    if corpus_path is None:
        raise InputError(directory / "corpus.jsonl", "missing corpus file")
    if queries_path is None:
        raise InputError(directory / "queries.jsonl", "missing queries file")
    queries, answers = load_queries_jsonl(queries_path)
    files = {"corpus": corpus_path, "queries": queries_path}
    qrels: Qrels = {}
    # A Q&A set may come without judgments: then its answers are its relevance.
    if not (answers and split is None and not qrels_splits(directory)):
        split = choose_split(directory, split)
        qrels_path = find_file(directory / "qrels", f"{split}.tsv")
        assert qrels_path is not None  # choose_split saw it
        qrels = load_qrels_tsv(qrels_path)
        files["qrels"] = qrels_path
    return Dataset(
        name=directory.name,
        corpus=load_corpus_jsonl(corpus_path),
        queries=queries,
        qrels=qrels,
        source=str(directory),
        format=DatasetFormat.BEIR,
        split=split,
        files=files,
        answers=answers,
    )
