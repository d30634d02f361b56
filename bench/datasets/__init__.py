"""Dataset loading and validation: BEIR, TREC and JSONL Q&A all become one `Dataset`.

>>> ds = load_dataset("builtin:numpy-docs")  # doctest: +SKIP
>>> len(ds.queries), len(ds.corpus)  # doctest: +SKIP
(688, 744)

`builtin:NAME` names a set ragbench builds at run time from text an installed package ships
(`bench/datasets/numpy_docs.py`); anything else is a path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.beir import choose_split, load_beir
from bench.datasets.check import DatasetCheck, check_dataset
from bench.datasets.io import find_file, read_jsonl, read_lines
from bench.datasets.jsonl import load_jsonl_qa, qa_file
from bench.datasets.model import Dataset, DatasetFormat, Document, Qrels
from bench.datasets.numpy_docs import numpy_docs_dataset
from bench.datasets.python_docs import python_docs_dataset
from bench.datasets.trec import load_trec, qrels_file

__all__ = [
    "DEMO_DATASET",
    "Dataset",
    "DatasetCheck",
    "Document",
    "Qrels",
    "check_dataset",
    "check_dataset_path",
    "detect_format",
    "load_dataset",
    "resolve_dataset_path",
]

FORMATS = tuple(DatasetFormat)
BUILTIN_PREFIX = "builtin:"
BUILTIN = {
    "numpy-docs": numpy_docs_dataset,
    "python-docs": python_docs_dataset,
}  # name -> builder returning the folder it built (or had built)
DEMO_DATASET = f"{BUILTIN_PREFIX}numpy-docs"


def resolve_dataset_path(path: str | Path) -> Path:
    """The folder or file behind a dataset argument: `builtin:NAME` is built (once) and its folder returned."""
    text = str(path)
    if not text.startswith(BUILTIN_PREFIX):
        return Path(path)
    return _builder(text)()


def _builder(text: str) -> Callable[[], Path]:
    name = text[len(BUILTIN_PREFIX) :]
    if name not in BUILTIN:
        raise InputError(text, f"unknown built-in data set (known: {', '.join(BUILTIN_PREFIX + n for n in BUILTIN)})")
    return BUILTIN[name]


def check_dataset_path(path: str | Path, split: str | None = None) -> None:
    """A dataset argument checked without reading (or building) its data: what a long run (a suite) checks
    before it starts. A built-in set is known by name; ragbench builds it whole when it is first loaded."""
    if str(path).startswith(BUILTIN_PREFIX):
        _builder(str(path))
    else:
        _locate(Path(path), split)


def detect_format(path: Path) -> DatasetFormat:
    if path.is_file():
        return DatasetFormat.JSONL
    if (path / "qrels").is_dir():
        return DatasetFormat.BEIR
    if any(p.name.lower().startswith("qrels") for p in path.iterdir()):
        return DatasetFormat.TREC
    found = qa_file(path)
    if found is not None and find_file(path, "corpus.jsonl") is not None:
        # BEIR queries without a qrels/ folder (a Q&A set with answers) carry `_id`; JSONL Q&A carries `id`.
        first = next(read_jsonl(found), None)
        return DatasetFormat.BEIR if first is not None and "_id" in first[1] else DatasetFormat.JSONL
    raise InputError(
        path,
        "cannot tell the format: expected BEIR (qrels/ folder, or queries.jsonl with answers), "
        "TREC (qrels* + topics* files) or JSONL Q&A (qa.jsonl + corpus.jsonl)",
    )


def load_dataset(path: str | Path, split: str | None = None, format: str | None = None) -> Dataset:
    """Load and validate a dataset; every hard problem raises `InputError` naming file and line."""
    path = resolve_dataset_path(path)
    try:
        dataset = _load(path, split, _locate(path, split, format))
    except OSError as exc:  # a folder that cannot be listed, a file that vanished: one line, not a traceback
        raise InputError(exc.filename or path, f"cannot read: {exc.strerror or exc}") from None
    _validate(dataset)
    return dataset


def _locate(path: Path, split: str | None = None, format: str | None = None) -> DatasetFormat:
    """The format of the dataset at `path`, its split checked, without reading the data."""
    try:
        if not path.exists():
            raise InputError(path, "no such file or folder")
        if format is not None and format not in FORMATS:
            raise InputError(path, f"unknown format {format!r} (known: {', '.join(FORMATS)})")
        found = DatasetFormat(format) if format else detect_format(path)
        if found in (DatasetFormat.BEIR, DatasetFormat.TREC) and not path.is_dir():
            raise InputError(path, f"a {found.upper()} dataset is a folder, not a file")
        if found == DatasetFormat.JSONL and split is not None:
            raise InputError(path, "--split does not apply to a JSONL Q&A dataset (it has one set of judgments)")
        if found == DatasetFormat.BEIR and split is not None:
            choose_split(path, split)
        if found == DatasetFormat.TREC:
            qrels_file(path, split)
    except OSError as exc:
        raise InputError(exc.filename or path, f"cannot read: {exc.strerror or exc}") from None
    return found


def _load(path: Path, split: str | None, format: DatasetFormat) -> Dataset:
    if format == DatasetFormat.BEIR:
        return load_beir(path, split)
    if format == DatasetFormat.TREC:
        return load_trec(path, split)
    return load_jsonl_qa(path)


def _validate(dataset: Dataset) -> None:
    """Cross-file checks that make a dataset unusable."""
    files = dataset.files
    if "corpus" in files and not dataset.corpus:
        raise InputError(files["corpus"], "empty corpus")
    if not dataset.queries:
        raise InputError(files["queries"], "no queries")
    if not dataset.qrels and not dataset.answers:
        raise InputError(files.get("qrels", files["queries"]), "no judgments and no answers")
    unknown = [qid for qid in dataset.qrels if qid not in dataset.queries]
    if unknown:
        qid = unknown[0]
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise InputError(
            files["qrels"], f"judgments name unknown query {qid!r}{more}", _first_line_of(files["qrels"], qid)
        )


def _first_line_of(path: Path, qid: str) -> int | None:
    """The first line whose first column is `qid` (only read again on the error path)."""
    for number, text in read_lines(path):
        if text.split(maxsplit=1)[0] == qid:
            return number
    return None
