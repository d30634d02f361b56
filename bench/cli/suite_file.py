"""Suite files: one TOML file names datasets, targets, endpoints, load sweeps and the gate's thresholds,
so a CI job is one command (`ragbench run SUITE.toml [--baseline DIR] [--out DIR]`).

    [gate]                      # compare's flags
    alpha = 0.05
    max_drop = { "nDCG@10" = 0.01, "R@100" = "2%" }
    primary = ["nDCG@10"]       # the gated quality checks (Holm's family); default: those with a max_drop
    max_p99_increase = "10%"
    min_throughput_ratio = 0.95

    [datasets.docs]             # NAME -> a dataset and how to sample it
    path = "builtin:numpy-docs" # or a path, relative to the suite file; split = "..." picks the qrels

    [targets]                   # NAME = target spec (`quality --target NAME=SPEC`)
    bm25 = "bm25"
    prod = "openwebui:hybrid@${OPENWEBUI_URL}"

    [[quality]]                 # one quality run per entry
    dataset = "docs"
    targets = ["bm25", "prod"]  # default: every target
    endpoints = ["tei"]         # what targets name with ?embedder= / ?reranker= (default: every endpoint)

    [endpoints]                 # NAME = endpoint spec (`identity/load -e NAME=SPEC`)
    ref = "reference"

    [[identity]]
    endpoints = ["ref", "tei"]
    dataset = "docs"            # or texts = "FILE"

    [[load]]                    # `ragbench load`'s flags; lists become 1,8,32
    endpoints = ["tei"]
    batch = [1, 8]

`${VAR}` in a string is replaced by the environment variable VAR (an unset one is an error). Secrets come
only from the environment: a secret-looking key, URL credentials or a secret-named spec parameter in the
file is an error (keys are read by the targets and endpoints themselves: OPENWEBUI_API_KEY, key_env=VAR).
The whole file is checked before any job runs, each value by its command's own checks (the option of the
same name on `ragbench quality/identity/load`, then the command's check of the whole request; paths must
exist, datasets must be readable as one of the formats, with their split). Every problem is one line
`SUITE.toml:LINE: what is wrong`. `ragbench run --overwrite` is passed to every job.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import tomllib
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

from bench.commands.identity import IdentityCommand, check_identity
from bench.commands.load import LoadRequest, check_load
from bench.commands.quality import QualityRequest, check_quality
from bench.commands.suite import Job, Request, Suite
from bench.core.errors import InputError, UserError
from bench.core.secrets import is_secret_name
from bench.core.spec_grammar import NAME
from bench.datasets import BUILTIN_PREFIX
from bench.gate.config import GateConfig, GateValueError, build_gate_config

_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # no "..": a name becomes a folder under --out
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_USERINFO = re.compile(r"://[^/@?#\s]+@")
_SECRET_PARAM = re.compile(r"[?&]([^=&]+)=")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

SECTIONS = ("suite", "gate", "datasets", "targets", "endpoints", "quality", "identity", "load")
DATASET_KEYS = {"path": str, "split": str, "max_queries": int, "max_docs": int}
QUALITY_KEYS = {
    "dataset": str,
    "targets": list,
    "measures": list,
    "depth": int,
    "seed": int,
    "name": str,
    "embedding_model": str,
    "cross_encoder": str,
    "rerank_depth": int,
    "generate": str,
    "endpoints": list,
    "no_cache": bool,
    "background": str,  # quality --background ENDPOINT@rate=...
    "background_from": str,
    "hourly_usd": (float, int),
}
# A list flag of `ragbench load`, written 1,8,32 on its command line: a list, a string or a number here.
_LIST_FLAGS = {
    "batch": (list, str, int),
    "concurrency": (list, str, int),
    "rate": (list, str, int, float),
    "lengths": (list, str, int),
    "documents": (list, str, int),
}
_TOML_TYPES: dict[Any, Any] = {str: str, Path: str, int: int, float: (float, int), list: list, bool: bool}


def _request_keys(request: type, skip: tuple[str, ...]) -> dict[str, Any]:
    """A command's request fields as suite keys, each with the TOML types it takes (a path is a string, a
    number may be written as an integer): the keys follow the request, never a second list."""
    hints = typing.get_type_hints(request)
    keys: dict[str, Any] = {}
    for field in dataclasses.fields(request):
        if field.name not in skip:
            hint = hints[field.name]  # X or X | None
            kind = next(t for t in typing.get_args(hint) if t is not NoneType) if isinstance(hint, UnionType) else hint
            keys[field.name] = _LIST_FLAGS.get(field.name) or _TOML_TYPES[typing.get_origin(kind) or kind]
    return keys


# `out` and `overwrite` come from `ragbench run`; `ray` is not a suite's (its jobs run where the suite runs).
IDENTITY_KEYS = {"name": str, **_request_keys(IdentityCommand, skip=("out", "overwrite"))}
LOAD_KEYS = {"name": str, **_request_keys(LoadRequest, skip=("out", "overwrite", "ray"))}
GATE_KEYS = {
    "alpha": (float, int),
    "max_drop": (dict, float, int, str),
    "significance": bool,
    "max_p99_increase": (str, float, int),
    "min_throughput_ratio": (float, int, str),
    "match": dict,
    "max_error_rate": (str, float, int),
    "inconclusive": str,
    "primary": list,  # MEASURE or TARGET:MEASURE (compare --primary)
    "min_ingest_ratio": (float, int, str),
    "max_query_p99_increase": (str, float, int),
    "calibration": list,  # A/A runs' folders, relative to the suite file (compare --calibration)
    "history": str,  # earlier runs' folder or glob, relative to the suite file (compare --history)
}
_PATH_KEYS = ("texts", "tokenizer", "embedding_model", "cross_encoder", "background_from")  # relative to the suite file
_PLURALS = {"measure": "measures", "target": "targets", "endpoint": "endpoints"}  # CLI option -> suite key


def _label(where: tuple) -> str:
    """("load", 1, "batch") -> "load #2.batch": how a message names a place in the file."""
    text = ""
    for part in where:
        text += f" #{part + 1}" if isinstance(part, int) else f".{part}" if text else part
    return text


@functools.cache
def _cli_command(name: str) -> Any:
    """`ragbench NAME` as Click sees it: its options with their types and bounds."""
    import typer

    import bench.cli  # noqa: F401  (registers every command on the app)
    from bench.cli.app import app

    return typer.main.get_command(app).commands[name]


def _named_key(message: str, entry: dict[str, Any]) -> tuple[str, ...]:
    """The first key of `entry` that an error message names (`--max-inflight` names max_inflight)."""
    for word in _WORD.findall(message):
        key = word.replace("-", "_")
        key = _PLURALS.get(key, key)
        if key in entry:
            return (key,)
    return ()


class _Reader:
    """Validation with the suite file's line numbers in every message."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def error(self, message: str, *keys: str | int) -> InputError:
        return InputError(self.path, message, self.line_of(*keys))

    def line_of(self, *keys: str | int) -> int | None:
        """The line of the last key of a path such as ("load", 1, "batch") (an integer: that entry of an array of
        tables), each found after the line of the one before it; best effort: the deepest line found."""
        found: int | None = None
        previous = ""
        for key in keys:
            start = found or 0
            if isinstance(key, int):  # the (key+1)-th [[previous]] header, counted from the first
                header = re.compile(rf"^\s*\[\[\s*{re.escape(previous)}\s*\]\]")
                hits = [n for n in range(start, len(self.lines)) if header.search(self.lines[n])]
                if key >= len(hits):
                    break
                found = hits[key]
                continue
            pattern = re.compile(rf'^\s*(\[\[?\s*)?(?:[\w.-]+\.)?["\']?{re.escape(key)}["\']?\s*(\]|=|\.)')
            number = next((n for n in range(start, len(self.lines)) if pattern.search(self.lines[n])), None)
            if number is None:
                break
            found, previous = number, key
        return found + 1 if found is not None else None

    def typed(self, table: dict[str, Any], allowed: dict[str, Any], where: tuple) -> dict[str, Any]:
        for key, value in table.items():
            if is_secret_name(key):
                raise self.error(
                    f"{_label((*where, key))}: secrets come from the environment only, never from a suite "
                    "file (targets read OPENWEBUI_API_KEY / LIGHTRAG_API_KEY; endpoints key_env=VAR)",
                    *where,
                    key,
                )
            if key not in allowed:
                raise self.error(f"{_label(where)}: unknown key {key!r} (known: {', '.join(allowed)})", *where, key)
            kinds = allowed[key] if isinstance(allowed[key], tuple) else (allowed[key],)
            if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
                names = " or ".join(
                    {int: "integer", float: "number", str: "string", list: "list", dict: "table", bool: "true/false"}[k]
                    for k in kinds
                )
                raise self.error(f"{_label((*where, key))}: expected {names}, got {type(value).__name__}", *where, key)
            if isinstance(value, list) and not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
            ):
                raise self.error(f"{_label((*where, key))}: expected a list of strings or numbers", *where, key)
        return table

    def option(self, command: str, key: str, value: Any, where: tuple) -> None:
        """`value` checked by `ragbench COMMAND`'s option of the same name: its type and bounds are declared
        once, on the command line, and a suite file gets exactly the same checks."""
        from typer._click import Context
        from typer._click.exceptions import BadParameter

        cli = _cli_command(command)
        option = {v: k for k, v in _PLURALS.items()}.get(key, key)
        param = next((p for p in cli.params if p.name == option), None)
        if param is None:
            return
        try:
            param.process_value(Context(cli), value)
        except BadParameter as exc:
            raise self.error(f"{_label((*where, key))} = {value!r}: {exc.message}", *where, key) from None

    def checked(self, check: Callable[[Any], Any], request: Request, entry: dict[str, Any], where: tuple) -> None:
        """The command's own check of the whole request (the one its CLI runs); the error at the key it names."""
        try:
            check(request)
        except UserError as exc:
            raise self.error(f"{_label(where)}: {exc}", *where, *_named_key(str(exc), entry)) from None

    def expand(self, value: str, *where: str | int) -> str:
        """`${VAR}` -> the environment's VAR."""

        def lookup(match: re.Match) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise self.error(f"{_label(where)}: environment variable {name} is not set", *where)
            return os.environ[name]

        return _VAR.sub(lookup, value)

    def spec(self, value: Any, parse: Callable[[str], Any], *where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"{_label(where)}: expected a spec string", *where)
        if _USERINFO.search(value) or any(is_secret_name(k) for k in _SECRET_PARAM.findall(value)):
            raise self.error(
                f"{_label(where)}: credentials in a spec; secrets come from the environment only "
                "(OPENWEBUI_API_KEY, LIGHTRAG_API_KEY, key_env=VAR)",
                *where,
            )
        spec = f"{where[-1]}={self.expand(value, *where)}"
        try:
            parse(spec)
        except UserError as exc:
            raise self.error(f"{_label(where)}: {exc}", *where) from None
        return spec

    def names(self, table: dict[str, Any], section: str, parse: Callable[[str], Any]) -> dict[str, str]:
        """NAME -> NAME=SPEC, each spec parsed by its command's own parser."""
        if not isinstance(table, dict):
            raise self.error(f'[{section}] must be a table of NAME = "spec"', section)
        specs = {}
        for name, value in table.items():
            if not NAME.fullmatch(name):
                raise self.error(f"{section}.{name}: a name may hold only letters, digits, _ . -", section, name)
            specs[name] = self.spec(value, parse, section, name)
        return specs

    def pick(self, wanted: Any, known: dict[str, str], where: tuple, what: str) -> list[str]:
        chosen = list(known) if wanted is None else wanted
        for name in chosen:
            if name not in known:
                raise self.error(
                    f"{_label(where)}: unknown {what} {name!r} (defined: {', '.join(known) or 'none'})", *where
                )
        if not chosen:
            raise self.error(f"{_label(where)}: no {what}s", *where)
        return [known[name] for name in chosen]

    def file(self, value: str, base: Path, *where: str | int) -> Path:
        """A path, relative to the suite file's folder; it must exist (found now, not after the earlier jobs ran)."""
        text = self.expand(value, *where)
        if text.startswith(BUILTIN_PREFIX):  # a data set ragbench builds, not a path beside the suite file
            return Path(text)
        path = Path(text)
        path = path if path.is_absolute() else base / path
        if not path.exists():
            raise self.error(f"{_label(where)}: {path}: no such file or folder", *where)
        return path


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
    name = reader.typed(data.get("suite", {}), {"name": str}, ("suite",)).get("name", path.stem)
    if not _FOLDER_NAME.fullmatch(name):  # it names the default --out folder, reports/NAME
        raise reader.error(
            f"suite.name {name!r} may hold only letters, digits, _ . - (it names a folder)", "suite", "name"
        )
    from bench.endpoints.spec import parse_spec as parse_endpoint
    from bench.targets.registry import parse_spec as parse_target

    datasets = _datasets(reader, data.get("datasets", {}))
    targets = reader.names(data.get("targets", {}), "targets", parse_target)
    endpoints = reader.names(data.get("endpoints", {}), "endpoints", parse_endpoint)
    suite = Suite(
        path,
        name,
        _gate(reader, data.get("gate", {})),
        [_quality(reader, e, i, datasets, targets, endpoints) for i, e in enumerate(data.get("quality", []))],
        [_identity(reader, e, i, datasets, endpoints) for i, e in enumerate(data.get("identity", []))],
        [_load(reader, e, i, datasets, endpoints) for i, e in enumerate(data.get("load", []))],
    )
    folders = [j.folder for j in suite.jobs]
    twice = sorted({f for f in folders if folders.count(f) > 1})
    if twice:
        raise reader.error(f'two runs would write the same folder: {", ".join(twice)} (give each a name = "...")')
    if not folders:
        raise reader.error("nothing to run: add a [[quality]], [[identity]] or [[load]] entry")
    return suite


def _read(path: Path) -> tuple[_Reader, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark dropped, as for every text file
    except FileNotFoundError:
        raise InputError(path, "no such suite file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the suite file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return _Reader(path, text), tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "malformed TOML"
        raise InputError(path, f"malformed TOML: {message}", int(found.group(1)) if found else None) from None


@dataclass
class _Dataset:
    path: Path
    split: str | None = None
    max_queries: int | None = None
    max_docs: int | None = None


def _datasets(reader: _Reader, table: dict[str, Any]) -> dict[str, _Dataset]:
    from bench.datasets import check_dataset_path

    datasets = {}
    for name, entry in table.items():
        where = ("datasets", name)
        if not isinstance(entry, dict):
            raise reader.error(f'datasets.{name}: expected a table with path = "..."', *where)
        entry = reader.typed(entry, DATASET_KEYS, where)
        if "path" not in entry:
            raise reader.error(f"datasets.{name}: no path", *where)
        for key in ("split", "max_queries", "max_docs"):  # how quality samples it: quality's own options
            if key in entry:
                reader.option("quality", key, entry[key], where)
        dataset = _Dataset(
            reader.file(entry["path"], reader.path.parent, *where, "path"),
            entry.get("split"),
            entry.get("max_queries"),
            entry.get("max_docs"),
        )
        try:
            check_dataset_path(dataset.path, dataset.split)
        except UserError as exc:
            raise reader.error(f"datasets.{name}: {exc}", *where, "split" if "split" in str(exc) else "path") from None
        datasets[name] = dataset
    return datasets


def _entry(
    reader: _Reader,
    entry: Any,
    kind: str,
    index: int,
    allowed: dict[str, Any],
    datasets: dict[str, _Dataset],
) -> dict[str, Any]:
    """An entry's keys typed, each checked by `ragbench KIND`'s option of that name, paths resolved, its
    dataset known."""
    if not isinstance(entry, dict):
        raise reader.error(f"{kind}: each entry must be a table ([[{kind}]])", kind, index)
    where = (kind, index)
    entry = reader.typed(entry, allowed, where)
    if "dataset" in entry and entry["dataset"] not in datasets:
        raise reader.error(
            f"{_label(where)}: dataset {entry['dataset']!r} is not in [datasets] "
            f"(defined: {', '.join(datasets) or 'none'})",
            *where,
            "dataset",
        )
    entry = {
        k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) if k in _LIST_FLAGS else v
        for k, v in entry.items()
    }
    for key, value in entry.items():
        if key not in ("dataset", "targets", "endpoints", "name"):  # names in this file, not the CLI's values
            reader.option(kind, key, value, where)
    for key in _PATH_KEYS:
        if key in entry:
            entry[key] = reader.file(entry[key], reader.path.parent, *where, key)
    return entry


def _job(
    reader: _Reader,
    kind: str,
    index: int,
    entry: dict[str, Any],
    request: Request,
    check: Callable[[Any], Any],
    default: str | None = None,
) -> Job:
    reader.checked(check, request, entry, (kind, index))
    name = entry.get("name", default)
    if name is None:
        return Job(kind if index == 0 else f"{kind}{index + 1}", request)
    if not _FOLDER_NAME.fullmatch(name):
        raise reader.error(
            f"{kind} #{index + 1}: name {name!r} may hold only letters, digits, _ . - (it names a folder under --out)",
            kind,
            index,
            "name",
        )
    return Job(f"{kind}-{name}", request)


def _quality(
    reader: _Reader,
    entry: Any,
    index: int,
    datasets: dict[str, _Dataset],
    targets: dict[str, str],
    endpoints: dict[str, str],
) -> Job:
    entry = _entry(reader, entry, "quality", index, QUALITY_KEYS, datasets)
    if "dataset" not in entry:
        raise reader.error(
            f"quality #{index + 1}: no dataset = NAME (defined: {', '.join(datasets) or 'none'})", "quality", index
        )
    dataset = datasets[entry["dataset"]]
    options = {
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
        targets=reader.pick(entry.get("targets"), targets, ("quality", index, "targets"), "target"),
        # The endpoints its targets name: every one in [endpoints] unless the entry lists them.
        endpoints=reader.pick(entry.get("endpoints"), endpoints, ("quality", index, "endpoints"), "endpoint")
        if endpoints or "endpoints" in entry
        else [],
    )
    return _job(reader, "quality", index, entry, request, check_quality, entry["dataset"])


def _identity(reader: _Reader, entry: Any, index: int, datasets: dict[str, _Dataset], endpoints: dict[str, str]) -> Job:
    entry = _entry(reader, entry, "identity", index, IDENTITY_KEYS, datasets)
    if ("dataset" in entry) == ("texts" in entry):
        raise reader.error(
            f'identity #{index + 1}: give exactly one of dataset = NAME or texts = "FILE"', "identity", index
        )
    request = IdentityCommand(
        endpoints=reader.pick(entry.get("endpoints"), endpoints, ("identity", index, "endpoints"), "endpoint"),
        dataset=datasets[entry["dataset"]].path if "dataset" in entry else None,
        **{k: v for k, v in entry.items() if k not in ("endpoints", "dataset", "name")},
    )
    return _job(reader, "identity", index, entry, request, check_identity)


def _load(reader: _Reader, entry: Any, index: int, datasets: dict[str, _Dataset], endpoints: dict[str, str]) -> Job:
    entry = _entry(reader, entry, "load", index, LOAD_KEYS, datasets)
    request = LoadRequest(
        endpoints=reader.pick(entry.get("endpoints"), endpoints, ("load", index, "endpoints"), "endpoint"),
        out=Path(),
        **{k: datasets[v].path if k == "dataset" else v for k, v in entry.items() if k not in ("endpoints", "name")},
    )
    return _job(reader, "load", index, entry, request, check_load)


def _gate(reader: _Reader, table: dict[str, Any]) -> GateConfig:
    table = reader.typed(table, GATE_KEYS, ("gate",))
    drops = table.get("max_drop", {})
    runs = [reader.file(str(v), reader.path.parent, "gate", "calibration") for v in table.get("calibration", [])]
    given = {k: v for k, v in table.items() if k not in ("max_drop", "primary", "calibration")}
    if "history" in table:  # a glob need not exist as a path: read when the gate runs
        given["history"] = str(reader.path.parent / reader.expand(table["history"], "gate", "history"))
    try:
        return build_gate_config(
            **given,
            max_drop=[f"{m}={v}" for m, v in drops.items()] if isinstance(drops, dict) else [str(drops)],
            primary=[str(m) for m in table.get("primary", [])],
            calibration=runs,
            name=lambda key: key,  # a suite key is named as the file spells it
        )
    except GateValueError as exc:
        raise reader.error(f"gate.{exc.key}: {exc.reason}", "gate", exc.key) from None
