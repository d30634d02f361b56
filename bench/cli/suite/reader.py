"""Reading a suite file: its TOML, its sections, and the suite they make, checked whole before anything runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from bench.cli.suite.gate import read_gate
from bench.cli.suite.jobs import FOLDER_NAME, datasets, identity_job, load_job, quality_job
from bench.cli.suite.keys import SECTIONS, TomlTable, as_list, as_table, as_text
from bench.cli.suite.values import ValueReader
from bench.commands.suite import Suite
from bench.core.errors import InputError, UserError
from bench.results.provenance import check_labels


def load_suite(path: Path) -> Suite:
    """The suite file, every value of every entry checked by its command's own checks before anything runs."""
    reader, data = _read(path)
    for key in data:
        if key not in SECTIONS:
            raise reader.error(f"unknown section [{key}] (known: {', '.join(SECTIONS)})", key)
    for key in ("suite", "gate", "datasets", "targets", "endpoints"):
        if not isinstance(data.get(key, {}), dict):
            raise reader.error(f"[{key}] must be a table", key)
    for key in ("quality", "identity", "load"):
        if not isinstance(data.get(key, []), list):
            raise reader.error(f"{key} must be written [[{key}]] (a list of tables)", key)
    head = reader.typed(as_table(data.get("suite")), {"name": str, "labels": dict}, ("suite",))
    given = as_text(head.get("name"))
    name = path.stem if given is None else given
    if not FOLDER_NAME.fullmatch(name):  # it names the default --out folder, reports/NAME
        raise reader.error(
            f"suite.name {name!r} may hold only letters, digits, _ . - (it names a folder)", "suite", "name"
        )
    from bench.commands.specs import endpoint_specs, target_specs

    named = datasets(reader, as_table(data.get("datasets")))
    targets = reader.names(data.get("targets", {}), "targets", target_specs)
    endpoints = reader.names(data.get("endpoints", {}), "endpoints", endpoint_specs)
    try:
        labels = check_labels(as_table(head.get("labels")), "suite.labels")
    except UserError as exc:
        raise reader.error(str(exc), "suite", "labels") from None
    suite = Suite(
        path,
        name,
        read_gate(reader, as_table(data.get("gate"))),
        [quality_job(reader, e, i, named, targets, endpoints) for i, e in enumerate(as_list(data.get("quality")))],
        [identity_job(reader, e, i, named, endpoints) for i, e in enumerate(as_list(data.get("identity")))],
        [load_job(reader, e, i, named, endpoints) for i, e in enumerate(as_list(data.get("load")))],
        labels,
    )
    folders = [j.folder for j in suite.jobs]
    twice = sorted({f for f in folders if folders.count(f) > 1})
    if twice:
        raise reader.error(f'two runs would write the same folder: {", ".join(twice)} (give each a name = "...")')
    if not folders:
        raise reader.error("nothing to run: add a [[quality]], [[identity]] or [[load]] entry")
    return suite


def _read(path: Path) -> tuple[ValueReader, TomlTable]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark dropped, as for every text file
    except FileNotFoundError:
        raise InputError(path, "no such suite file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the suite file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return ValueReader(path, text), tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "malformed TOML"
        raise InputError(path, f"malformed TOML: {message}", int(found.group(1)) if found else None) from None
