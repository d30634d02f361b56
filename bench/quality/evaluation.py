"""Evaluate files as trec_eval does: read qrels and run, score, done."""

from __future__ import annotations

from pathlib import Path

from bench.datasets.beir import load_qrels_tsv
from bench.datasets.io import read_lines
from bench.datasets.model import Qrels
from bench.datasets.trec import load_trec_qrels
from bench.errors import InputError
from bench.quality.metrics import Scores, evaluate, parse_measure
from bench.quality.runs import read_run


def read_qrels(path: Path) -> Qrels:
    """TREC qrels (4 columns) or a BEIR qrels TSV (3 columns, header), told apart by the first line."""
    if not path.is_file():
        raise InputError(path, "no such qrels file")
    first = next(read_lines(path), None)
    if first is None:
        raise InputError(path, "empty qrels file")
    if len(first[1].split()) == 4:
        return load_trec_qrels(path)
    return load_qrels_tsv(path)


def evaluate_files(qrels_path: Path, run_path: Path, measures: list[str], complete: bool) -> Scores:
    parsed = [parse_measure(m) for m in measures]
    return evaluate(read_qrels(qrels_path), read_run(run_path), parsed, complete)
