"""builtin:python-docs: a known-item search built at run time from the docstrings of the installed Python's standard
library and of the packages installed beside ragbench — a large corpus (tens of thousands of documents) ragbench may
use, as `grow`'s distractors or as a dataset, without shipping any text.

Built as numpy-docs is (bench/datasets/numpy_docs.py): each public function's and class's docstring split into its
summary (the query) and its body (the relevant document, titled with the qualified name). The sources are read
with `ast`, never imported (importing every module runs code: `antigravity` opens a browser); test packages are
left out. Deterministic for an environment: the standard library, then site-packages, files in sorted order, the
first of identical docstrings kept. ORIGIN.md names each package the text comes from, with its licence.

>>> path = python_docs_dataset()  # doctest: +SKIP
>>> sorted(p.name for p in path.iterdir())  # doctest: +SKIP
['ORIGIN.md', 'corpus.jsonl', 'qrels', 'queries.jsonl']
"""

from __future__ import annotations

import ast
import hashlib
import platform
import sysconfig
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from bench.datasets.numpy_docs import DocEntry, build_once, cache_root, split_docstring, write_beir

BUILD_ID = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:10]
SKIPPED = {"dist-packages", "test", "tests", "idle_test", "__pycache__", "__phello__"}  # folders left out


def python_docs_dataset(root: Path | None = None) -> Path:
    """The BEIR folder of the python-docs set for this Python, built once and reused."""
    folder = (root or cache_root() / "datasets") / f"python-docs-{platform.python_version()}-{BUILD_ID}"
    return build_once(folder, "python-docs", _build)


def _build(staging: Path) -> None:
    entries = collect_entries()
    packages = Counter(entry.name.split(".")[0] for entry in entries)
    write_beir(staging, entries, lambda documents, queries: origin_text(documents, queries, dict(packages)))


def roots() -> list[Path]:
    """The standard library, then the site-packages of the running environment."""
    paths = sysconfig.get_paths()
    found = [Path(paths["stdlib"])]
    if Path(paths["purelib"]).is_dir() and Path(paths["purelib"]) != found[0]:
        found.append(Path(paths["purelib"]))
    return found


def collect_entries(folders: list[Path] | None = None) -> list[DocEntry]:
    """Every public function's and class's docstring under `folders` (default: `roots()`), each docstring once."""
    entries: list[DocEntry] = []
    seen: set[str] = set()
    names: set[str] = set()  # a name defined twice (a property's getter and setter) is one document: the first
    for root in folders or roots():
        for path in sorted(root.rglob("*.py")):
            relative = path.relative_to(root)
            if SKIPPED & set(relative.parts[:-1]) or (
                root.name != "site-packages" and "site-packages" in relative.parts
            ):
                continue
            module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            for name, doc in _docstrings(path, module):
                if doc in seen or name in names:
                    continue
                seen.add(doc)
                entry = split_docstring(name, doc)
                if entry is not None:
                    names.add(name)
                    entries.append(entry)
    return entries


def _docstrings(path: Path, module: str) -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of each public function and class of a source file, nested ones included; a
    file that does not parse (a Python 2 example, an encoding it does not declare) gives none."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return
    stack: list[tuple[str, ast.AST]] = [(module, tree)]
    while stack:
        prefix, node = stack.pop(0)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not child.name.startswith(
                "_"
            ):
                name = f"{prefix}.{child.name}"
                doc = ast.get_docstring(child)
                if doc:
                    yield name, doc
                stack.append((name, child))


def origin_text(documents: int, queries: int, packages: dict[str, int] | None = None) -> str:
    return (
        "# python-docs: a known-item search built from installed Python docstrings\n\n"
        f"- Source: the docstrings of Python {platform.python_version()}'s standard library and of the packages "
        f"installed beside ragbench, as installed ({', '.join(map(str, roots()))}), read with `ast` (never "
        "imported); test packages left out.\n"
        f"- Licence of the text: each package's own (the docstrings are part of it): {licences(packages or {})}.\n"
        f"- Built by ragbench (builder {BUILD_ID}): {documents} documents, {queries} queries, split `test`.\n"
        "- Query: the summary paragraph of a public function's or class's docstring. Relevant document (grade 1): "
        "the rest of that docstring, titled with its qualified name; objects with the same summary share one "
        "query.\n"
    )


def licences(packages: dict[str, int]) -> str:
    """`name version (licence): N documents` for each top-level package the documents come from."""
    from importlib import metadata

    from bench.datasets.numpy_docs import _licence

    owners = metadata.packages_distributions()
    said = []
    for top, count in sorted(packages.items()):
        dists = owners.get(top)
        if not dists:  # the standard library's own modules
            said.append(f"{top} (Python standard library, PSF-2.0): {count}")
            continue
        dist = dists[0]
        said.append(f"{top} ({dist} {metadata.version(dist)}, {_licence(dist)}): {count}")
    return "; ".join(said)
