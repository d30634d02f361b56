"""The demo's data set, built at run time from text an installed dependency ships: numpy's public API docstrings.

A known-item search: each query is the one-line summary of a documented numpy object; the relevant
document is the rest of that object's docstring (its name is the title). The project ships no third-party
text: the set is made on the user's machine from the numpy they have installed, and its origin (package,
version, licence) is written beside it and into every report. Objects whose summaries are identical (the
`numpy.ma` twins of numpy functions, aliases) become one query with every such document relevant.

>>> path = numpy_docs_dataset()  # doctest: +SKIP
>>> sorted(p.name for p in path.iterdir())  # doctest: +SKIP
['ORIGIN.md', 'corpus.jsonl', 'qrels', 'queries.jsonl']
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from bench.core.errors import UserError

# The build is named by a hash of this module's source: a ragbench whose builder changed never reuses
# a set an older builder made.
BUILD_ID = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:10]
# numpy's public namespaces (those with a documented `__all__`), in a fixed order: the first name wins.
MODULES = (
    "numpy",
    "numpy.linalg",
    "numpy.fft",
    "numpy.random",
    "numpy.polynomial",
    "numpy.ma",
    "numpy.strings",
    "numpy.char",
    "numpy.rec",
    "numpy.testing",
    "numpy.exceptions",
    "numpy.lib",
)
MIN_SUMMARY_WORDS = 3  # "Return the sum." is too short to be a query
MIN_BODY_WORDS = 20  # a body of a line or two ("See `numpy.sum`.") is no document to find
# A builtin's or ufunc's docstring starts with its signature, e.g. `add(x1, x2, /, out=None, ...)`.
SIGNATURE = re.compile(r"^[A-Za-z_][\w.]*\(.*\)\s*(->.*)?$", re.DOTALL)


@dataclass(frozen=True)
class DocEntry:
    name: str  # qualified public name, e.g. numpy.linalg.norm
    summary: str  # the docstring's first paragraph (signature line skipped), on one line
    body: str  # the rest of the docstring


def cache_root() -> Path:
    """Where ragbench keeps what it builds or caches outside a project (RAGBENCH_CACHE or ~/.cache/ragbench)."""
    return Path(os.environ.get("RAGBENCH_CACHE") or Path.home() / ".cache" / "ragbench")


def numpy_docs_dataset(root: Path | None = None) -> Path:
    """The BEIR folder of the numpy-docs set for the installed numpy, built once and reused."""
    import numpy

    folder = (root or cache_root() / "datasets") / f"numpy-docs-{numpy.__version__}-{BUILD_ID}"
    return build_once(folder, "numpy-docs", build_apart)


def build_apart(staging: Path) -> None:
    """The set written into `staging` by a fresh interpreter that imports numpy alone: a library imported in this
    process may rewrite numpy's docstrings (scipy adds a section to `numpy.sinc`'s), and a set named by numpy's
    version and this builder must be the same whatever ran before it (bm25's nDCG@10 was 0.6429 or 0.6427)."""
    done = subprocess.run([sys.executable, "-m", __name__, str(staging)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise OSError(f"building numpy-docs in a fresh interpreter failed: {last}")


def build_once(folder: Path, name: str, build: Callable[[Path], None]) -> Path:
    """`folder`, built by `build` into a staging folder beside it and renamed into place, unless a finished build
    is there already (its ORIGIN.md, written last)."""
    if (folder / "ORIGIN.md").is_file():  # written last: its presence means the build finished
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
        try:
            build(staging)
            if folder.exists():  # an unfinished build of the same name (no ORIGIN.md): ragbench's own
                shutil.rmtree(folder)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as exc:
        raise UserError(
            f"cannot build the {name} data set in {exc.filename or folder.parent}: "
            f"{exc.strerror or exc}; set RAGBENCH_CACHE to a writable folder"
        ) from None
    return folder


def collect_entries() -> list[DocEntry]:
    """Every documented public object of numpy, once (by identity, then by docstring), in a fixed order."""
    entries: list[DocEntry] = []
    seen_objects: set[int] = set()
    seen_docs: set[str] = set()
    for module_name in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # a namespace another numpy version lacks
            continue
        for attribute in sorted(getattr(module, "__all__", [])):
            obj = getattr(module, attribute, None)
            if not _is_numpy_callable(obj) or id(obj) in seen_objects:
                continue
            seen_objects.add(id(obj))
            doc = inspect.getdoc(obj)
            if not doc or doc in seen_docs:
                continue
            seen_docs.add(doc)
            entry = split_docstring(f"{module_name}.{attribute}", doc)
            if entry is not None:
                entries.append(entry)
    return entries


def _is_numpy_callable(obj: object) -> bool:
    """Functions, classes and ufuncs defined by numpy: not constants (`numpy.pi`), not instances whose
    docstring is their type's (`numpy.False_`), not Python's own types re-exported (`ScalarType`)."""
    return callable(obj) and str(getattr(obj, "__module__", None) or "").startswith("numpy")


def split_docstring(name: str, doc: str) -> DocEntry | None:
    """Summary paragraph and body of a docstring; None when either is too short to search with."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", doc.strip()) if p.strip()]
    if paragraphs and SIGNATURE.match(paragraphs[0]):
        paragraphs = paragraphs[1:]
    if len(paragraphs) < 2:
        return None
    summary = " ".join(paragraphs[0].split())
    body = "\n\n".join(paragraphs[1:])
    if len(summary.split()) < MIN_SUMMARY_WORDS or len(body.split()) < MIN_BODY_WORDS:
        return None
    return DocEntry(name, summary, body)


def write_beir(folder: Path, entries: list[DocEntry], origin: Callable[[int, int], str] | None = None) -> None:
    """corpus.jsonl, queries.jsonl, qrels/test.tsv and ORIGIN.md (last: `origin`(documents, queries), numpy's
    by default) in `folder`."""
    by_summary: dict[str, list[DocEntry]] = {}
    for entry in entries:
        by_summary.setdefault(entry.summary, []).append(entry)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for entry in entries:
            corpus.write(json.dumps({"_id": entry.name, "title": entry.name, "text": entry.body}) + "\n")
    (folder / "qrels").mkdir()
    with (
        (folder / "queries.jsonl").open("w", encoding="utf-8") as queries,
        (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as qrels,
    ):
        qrels.write("query-id\tcorpus-id\tscore\n")
        for summary, group in by_summary.items():
            qid = f"q:{group[0].name}"
            queries.write(json.dumps({"_id": qid, "text": summary}) + "\n")
            for entry in group:
                qrels.write(f"{qid}\t{entry.name}\t1\n")
    (folder / "ORIGIN.md").write_text((origin or origin_text)(len(entries), len(by_summary)), encoding="utf-8")


def origin_text(documents: int, queries: int) -> str:
    import numpy

    licence = _licence("numpy")
    return (
        "# numpy-docs: a known-item search built from numpy's public API docstrings\n\n"
        f"- Source: the docstrings of numpy {numpy.__version__} as installed ({Path(numpy.__file__).parent}),"
        f" namespaces {', '.join(MODULES)}.\n"
        f"- Licence of the text: {licence} (numpy's licence; the docstrings are part of numpy).\n"
        f"- Built by ragbench (builder {BUILD_ID}): {documents} documents, {queries} queries, split `test`.\n"
        "- Query: the summary line of an object's docstring (a ufunc's signature line skipped). Relevant"
        " document (grade 1): the rest of that docstring, titled with the object's name; objects with"
        " the same summary share one query.\n"
    )


def _licence(package: str) -> str:
    meta = metadata.metadata(package)
    fields = meta.json  # lower-case keys; a field the package does not declare is absent
    return str(fields.get("license_expression") or str(fields.get("license") or "unknown").splitlines()[0])


if __name__ == "__main__":  # build_apart's fresh interpreter: numpy's docstrings as numpy alone leaves them
    write_beir(Path(sys.argv[1]), collect_entries())
