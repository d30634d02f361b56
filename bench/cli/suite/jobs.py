"""A suite's datasets and jobs: each [[quality]], [[identity]] and [[load]] entry made into its command's own
request, every value checked by that command's checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cli.suite.checks import checked, option
from bench.cli.suite.keys import (
    DATASET_KEYS,
    IDENTITY_KEYS,
    LIST_FLAGS,
    LOAD_KEYS,
    PATH_KEYS,
    QUALITY_KEYS,
    RENAMED_KEYS,
    EntryValues,
    TomlTable,
    TomlTypes,
    as_int,
    as_text,
)
from bench.cli.suite.lines import Where, label
from bench.cli.suite.values import Named, ValueReader
from bench.commands.identity import IdentityCommand, check_identity
from bench.commands.load import check_load
from bench.commands.load_request import LoadRequest
from bench.commands.quality import QualityPlan, QualityRequest, check_quality
from bench.commands.suite import Job, Plan, Request
from bench.core.errors import UserError
from bench.endpoints.spec import EndpointSpec
from bench.targets.base import TargetSpec

FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # no "..": a name becomes a folder under --out


@dataclass
class SuiteDataset:
    """A [datasets] entry: the data set and how quality samples it."""

    path: Path
    split: str | None = None
    max_queries: int | None = None
    max_docs: int | None = None


def datasets(reader: ValueReader, table: TomlTable) -> dict[str, SuiteDataset]:
    from bench.datasets import check_dataset_path

    found = {}
    for name, entry in table.items():
        where = ("datasets", name)
        if not isinstance(entry, dict):
            raise reader.error(f'datasets.{name}: expected a table with path = "..."', *where)
        entry = reader.typed(entry, DATASET_KEYS, where)
        if "path" not in entry:
            raise reader.error(f"datasets.{name}: no path", *where)
        for key in ("split", "max_queries", "max_docs"):  # how quality samples it: quality's own options
            if key in entry:
                option(reader, "quality", key, entry[key], where)
        dataset = SuiteDataset(
            reader.file(str(entry["path"]), reader.path.parent, *where, "path"),
            as_text(entry.get("split")),
            as_int(entry.get("max_queries")),
            as_int(entry.get("max_docs")),
        )
        try:
            check_dataset_path(dataset.path, dataset.split)
        except UserError as exc:
            raise reader.error(f"datasets.{name}: {exc}", *where, "split" if "split" in str(exc) else "path") from None
        found[name] = dataset
    return found


def _entry(
    reader: ValueReader,
    entry: Any,
    kind: str,
    index: int,
    allowed: dict[str, TomlTypes],
    datasets: dict[str, SuiteDataset],
) -> EntryValues:
    """An entry's keys typed, each checked by `ragbench KIND`'s option of that name, paths resolved, its
    dataset known."""
    if not isinstance(entry, dict):
        raise reader.error(f"{kind}: each entry must be a table ([[{kind}]])", kind, index)
    where: Where = (kind, index)
    entry = reader.typed(reader.renamed(entry, RENAMED_KEYS[kind], where), allowed, where)
    if "dataset" in entry and entry["dataset"] not in datasets:
        raise reader.error(
            f"{label(where)}: dataset {entry['dataset']!r} is not in [datasets] "
            f"(defined: {', '.join(datasets) or 'none'})",
            *where,
            "dataset",
        )
    values: EntryValues = {
        k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) if k in LIST_FLAGS else v
        for k, v in entry.items()
    }
    for key, value in values.items():
        if key not in ("dataset", "targets", "endpoints", "name"):  # names in this file, not the CLI's values
            option(reader, kind, key, value, where)
    for key in PATH_KEYS:
        if key in values:
            values[key] = reader.file(str(values[key]), reader.path.parent, *where, key)
    return values


def _job(
    reader: ValueReader,
    kind: str,
    index: int,
    entry: EntryValues,
    request: Request,
    check: Callable[[], Plan],
    default: str | None = None,
) -> Job:
    kept = checked(reader, check, entry, (kind, index))  # run as checked: its specs are not parsed again
    given = as_text(entry.get("name"))  # a string: `typed` checked it
    name = default if given is None else given
    if name is None:
        return Job(kind if index == 0 else f"{kind}{index + 1}", request, kept)
    if not FOLDER_NAME.fullmatch(name):
        raise reader.error(
            f"{kind} #{index + 1}: name {name!r} may hold only letters, digits, _ . - (it names a folder under --out)",
            kind,
            index,
            "name",
        )
    return Job(f"{kind}-{name}", request, kept)


def quality_job(
    reader: ValueReader,
    entry: Any,
    index: int,
    datasets: dict[str, SuiteDataset],
    targets: Named[TargetSpec],
    endpoints: Named[EndpointSpec],
) -> Job:
    entry = _entry(reader, entry, "quality", index, QUALITY_KEYS, datasets)
    if "dataset" not in entry:
        raise reader.error(
            f"quality #{index + 1}: no dataset = NAME (defined: {', '.join(datasets) or 'none'})", "quality", index
        )
    dataset = datasets[str(entry["dataset"])]
    options: dict[str, Any] = {
        k: str(v) if isinstance(v, Path) else v
        for k, v in entry.items()
        if k not in ("dataset", "targets", "name", "endpoints")
    }
    request = QualityRequest(
        dataset=dataset.path,
        split=dataset.split,
        max_queries=dataset.max_queries,
        max_docs=dataset.max_docs,
        out=Path(),
        **options,
        targets=reader.pick(entry.get("targets"), targets.texts, ("quality", index, "targets"), "target"),
        # The endpoints its targets name: every one in [endpoints] unless the entry lists them.
        endpoints=reader.pick(entry.get("endpoints"), endpoints.texts, ("quality", index, "endpoints"), "endpoint")
        if endpoints.texts or "endpoints" in entry
        else [],
    )

    def check() -> QualityPlan:
        return check_quality(request, targets.parsed, endpoints.parsed)

    return _job(reader, "quality", index, entry, request, check, str(entry["dataset"]))


def identity_job(
    reader: ValueReader, entry: Any, index: int, datasets: dict[str, SuiteDataset], endpoints: Named[EndpointSpec]
) -> Job:
    entry = _entry(reader, entry, "identity", index, IDENTITY_KEYS, datasets)
    if ("dataset" in entry) == ("texts" in entry):
        raise reader.error(
            f'identity #{index + 1}: give exactly one of dataset = NAME or texts = "FILE"', "identity", index
        )
    request = IdentityCommand(
        endpoints=reader.pick(entry.get("endpoints"), endpoints.texts, ("identity", index, "endpoints"), "endpoint"),
        dataset=datasets[str(entry["dataset"])].path if "dataset" in entry else None,
        **{k: v for k, v in entry.items() if k not in ("endpoints", "dataset", "name")},
    )
    return _job(reader, "identity", index, entry, request, lambda: check_identity(request, endpoints.parsed))


def load_job(
    reader: ValueReader, entry: Any, index: int, datasets: dict[str, SuiteDataset], endpoints: Named[EndpointSpec]
) -> Job:
    entry = _entry(reader, entry, "load", index, LOAD_KEYS, datasets)
    options: dict[str, Any] = {
        k: datasets[v].path if k == "dataset" else v for k, v in entry.items() if k not in ("endpoints", "name")
    }
    request = LoadRequest(
        endpoints=reader.pick(entry.get("endpoints"), endpoints.texts, ("load", index, "endpoints"), "endpoint"),
        out=Path(),
        **options,
    )
    return _job(reader, "load", index, entry, request, lambda: check_load(request, endpoints.parsed))
