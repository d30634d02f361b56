"""Suite files: one TOML file names datasets, targets, endpoints, load sweeps and the gate's thresholds,
so a CI job is one command (`ragbench run SUITE.toml [--baseline DIR] [--out DIR]`).

    [gate]                      # compare's flags
    alpha = 0.05
    max_drop = { "nDCG@10" = 0.01, "R@100" = "2%" }
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
Every problem is one line `SUITE.toml:LINE: what is wrong`.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.datasets import BUILTIN_PREFIX
from bench.errors import (EXIT_CHECK_FAILED, EXIT_MEASUREMENT_FAILED, EXIT_USER_ERROR, InputError, MeasurementFailed,
                          UserError)
from bench.results.compare import GateConfig, parse_allowance, parse_error_rate, parse_max_drops, parse_ratio
from bench.secrets import is_secret_name

_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_FOLDER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # no "..": a name becomes a folder under --out
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_USERINFO = re.compile(r"://[^/@?#\s]+@")
_SECRET_PARAM = re.compile(r"[?&]([^=&]+)=")

SECTIONS = ("suite", "gate", "datasets", "targets", "endpoints", "quality", "identity", "load")
DATASET_KEYS = {"path": str, "split": str, "max_queries": int, "max_docs": int}
QUALITY_KEYS = {"dataset": str, "targets": list, "measures": list, "depth": int, "seed": int, "name": str,
                "embedding_model": str, "cross_encoder": str, "rerank_depth": int, "generate": str}
IDENTITY_KEYS = {"endpoints": list, "dataset": str, "texts": str, "reference": str, "dtype": str, "tokenizer": str,
                 "limit": int, "name": str}
# `ragbench load`'s flags (issue 8): lists of numbers are written 1,8,32 on its command line.
LOAD_KEYS = {"endpoints": list, "name": str, "op": str, "batch": (list, str, int), "concurrency": (list, str, int),
             "rate": (list, str, int, float), "arrival": str, "max_inflight": int, "burst": int, "duration": str,
             "requests": int, "warmup": str, "workers": int, "texts": str, "dataset": str,
             "lengths": (list, str, int), "documents": (list, str, int), "tokenizer": str, "timeout": str, "seed": int,
             "max_error_rate": (float, int)}
GATE_KEYS = {"alpha": (float, int), "max_drop": (dict, float, int, str), "significance": bool,
             "max_p99_increase": (str, float, int), "min_throughput_ratio": (float, int, str), "match": dict,
             "max_error_rate": (str, float, int)}


@dataclass
class DatasetEntry:
    path: Path
    split: str | None = None
    max_queries: int | None = None
    max_docs: int | None = None


@dataclass
class QualityJob:
    folder: str  # under --out: quality-NAME (NAME: the entry's name, else its dataset's)
    dataset: DatasetEntry
    targets: list[str]  # NAME=SPEC
    options: dict[str, Any] = field(default_factory=dict)  # measures, depth, seed, models


@dataclass
class IdentityJob:
    folder: str  # under --out: identity-NAME, or identity, identity2, ... for unnamed entries
    endpoints: list[str]  # NAME=SPEC
    dataset: Path | None = None
    texts: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)  # reference, dtype, tokenizer, limit


@dataclass
class LoadJob:
    folder: str  # under --out: load-NAME, or load, load2, ...
    endpoints: list[str]  # NAME=SPEC
    flags: dict[str, Any] = field(default_factory=dict)  # `ragbench load`'s flags, as its request takes them


@dataclass
class Suite:
    path: Path
    name: str
    gate: GateConfig
    quality: list[QualityJob]
    identity: list[IdentityJob]
    load: list[LoadJob]


class _Reader:
    """Validation with the suite file's line numbers in every message."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def error(self, message: str, *keys: str) -> InputError:
        return InputError(self.path, message, self.line_of(*keys))

    def line_of(self, *keys: str) -> int | None:
        """The line of the last key of a dotted path: found after the line of its table, best effort."""
        if not keys:
            return None
        start = 0
        for key in keys:
            pattern = re.compile(rf'^\s*(\[\[?\s*)?(?:[\w.-]+\.)?["\']?{re.escape(key)}["\']?\s*(\]|=|\.)')
            for number in range(start, len(self.lines)):
                if pattern.search(self.lines[number]):
                    start = number
                    break
            else:
                return start + 1 if start else None
        return start + 1

    def typed(self, table: dict[str, Any], allowed: dict[str, Any], where: tuple[str, ...]) -> dict[str, Any]:
        for key, value in table.items():
            if is_secret_name(key):
                raise self.error(f"{'.'.join(where + (key,))}: secrets come from the environment only, never from a suite "
                                 "file (targets read OPENWEBUI_API_KEY / LIGHTRAG_API_KEY; endpoints key_env=VAR)",
                                 *where, key)
            if key not in allowed:
                raise self.error(f"{'.'.join(where)}: unknown key {key!r} (known: {', '.join(allowed)})", *where, key)
            kinds = allowed[key] if isinstance(allowed[key], tuple) else (allowed[key],)
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                names = " or ".join({int: "integer", float: "number", str: "string", list: "list", dict: "table",
                                     bool: "true/false"}[k] for k in kinds)
                raise self.error(f"{'.'.join(where + (key,))}: expected {names}, got {type(value).__name__}", *where, key)
            if isinstance(value, list) and not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                   for v in value):
                raise self.error(f"{'.'.join(where + (key,))}: expected a list of strings or numbers", *where, key)
        return table

    def expand(self, value: str, *where: str) -> str:
        """`${VAR}` -> the environment's VAR."""
        def lookup(match: re.Match) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise self.error(f"{'.'.join(where)}: environment variable {name} is not set", *where)
            return os.environ[name]

        return _VAR.sub(lookup, value)

    def spec(self, value: Any, *where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"{'.'.join(where)}: expected a spec string", *where)
        if _USERINFO.search(value) or any(is_secret_name(k) for k in _SECRET_PARAM.findall(value)):
            raise self.error(f"{'.'.join(where)}: credentials in a spec; secrets come from the environment only "
                             "(OPENWEBUI_API_KEY, LIGHTRAG_API_KEY, key_env=VAR)", *where)
        return self.expand(value, *where)

    def names(self, table: dict[str, Any], section: str) -> dict[str, str]:
        if not isinstance(table, dict):
            raise self.error(f"[{section}] must be a table of NAME = \"spec\"", section)
        specs = {}
        for name, value in table.items():
            if not _NAME.fullmatch(name):
                raise self.error(f"{section}.{name}: a name may hold only letters, digits, _ . -", section, name)
            specs[name] = self.spec(value, section, name)
        return specs

    def pick(self, wanted: Any, known: dict[str, str], where: tuple[str, ...], what: str) -> list[str]:
        chosen = list(known) if wanted is None else wanted
        for name in chosen:
            if name not in known:
                raise self.error(f"{'.'.join(where)}: unknown {what} {name!r} (defined: {', '.join(known) or 'none'})", *where)
        if not chosen:
            raise self.error(f"{'.'.join(where)}: no {what}s", *where)
        return [f"{name}={known[name]}" for name in chosen]

    def file(self, value: str, base: Path, *where: str) -> Path:
        text = self.expand(value, *where)
        if text.startswith(BUILTIN_PREFIX):  # a data set ragbench builds, not a path beside the suite file
            return Path(text)
        path = Path(text)
        return path if path.is_absolute() else base / path


def load_suite(path: Path) -> Suite:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a leading byte-order mark dropped, as for every text file
    except FileNotFoundError:
        raise InputError(path, "no such suite file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the suite file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "malformed TOML"
        raise InputError(path, f"malformed TOML: {message}", int(found.group(1)) if found else None) from None
    reader, base = _Reader(path, text), path.parent
    for key in data:
        if key not in SECTIONS:
            raise reader.error(f"unknown section [{key}] (known: {', '.join(SECTIONS)})", key)
    for key in ("suite", "gate", "datasets", "targets", "endpoints"):
        if not isinstance(data.get(key, {}), dict):
            raise reader.error(f"[{key}] must be a table", key)
    for key in ("quality", "identity", "load"):
        if not isinstance(data.get(key, []), list):
            raise reader.error(f"{key} must be written [[{key}]] (a list of tables)", key)
    suite_table = reader.typed(data.get("suite", {}), {"name": str}, ("suite",))
    datasets = {}
    for name, entry in data.get("datasets", {}).items():
        if not isinstance(entry, dict):
            raise reader.error(f"datasets.{name}: expected a table with path = \"...\"", "datasets", name)
        entry = reader.typed(entry, DATASET_KEYS, ("datasets", name))
        if "path" not in entry:
            raise reader.error(f"datasets.{name}: no path", "datasets", name)
        datasets[name] = DatasetEntry(reader.file(entry["path"], base, "datasets", name, "path"), entry.get("split"),
                                      entry.get("max_queries"), entry.get("max_docs"))
    targets = reader.names(data.get("targets", {}), "targets")
    endpoints = reader.names(data.get("endpoints", {}), "endpoints")
    suite = Suite(path, suite_table.get("name", path.stem), _gate(reader, data.get("gate", {})), [], [], [])
    for i, entry in enumerate(data.get("quality", [])):
        where = ("quality",)
        entry = reader.typed(_table(reader, entry, "quality"), QUALITY_KEYS, where)
        if entry.get("dataset") not in datasets:
            raise reader.error(f"quality #{i + 1}: dataset {entry.get('dataset')!r} is not in [datasets] "
                               f"(defined: {', '.join(datasets) or 'none'})", *where)
        options = {k: v for k, v in entry.items() if k not in ("dataset", "targets", "name")}
        for key in ("embedding_model", "cross_encoder"):
            if key in options:
                options[key] = str(reader.file(options[key], base, *where, key))
        suite.quality.append(QualityJob(_folder(reader, "quality", entry, i, entry["dataset"]), datasets[entry["dataset"]],
                                        reader.pick(entry.get("targets"), targets, where + ("targets",), "target"), options))
    for i, entry in enumerate(data.get("identity", [])):
        where = ("identity",)
        entry = reader.typed(_table(reader, entry, "identity"), IDENTITY_KEYS, where)
        if ("dataset" in entry) == ("texts" in entry):
            raise reader.error(f"identity #{i + 1}: give exactly one of dataset = NAME or texts = \"FILE\"", *where)
        if "dataset" in entry and entry["dataset"] not in datasets:
            raise reader.error(f"identity #{i + 1}: dataset {entry['dataset']!r} is not in [datasets]", *where)
        options = {k: v for k, v in entry.items() if k in ("reference", "dtype", "limit")}
        if "tokenizer" in entry:
            options["tokenizer"] = reader.file(entry["tokenizer"], base, *where, "tokenizer")
        suite.identity.append(IdentityJob(
            _folder(reader, "identity", entry, i),
            reader.pick(entry.get("endpoints"), endpoints, where + ("endpoints",), "endpoint"),
            datasets[entry["dataset"]].path if "dataset" in entry else None,
            reader.file(entry["texts"], base, *where, "texts") if "texts" in entry else None, options))
    for i, entry in enumerate(data.get("load", [])):
        where = ("load",)
        entry = reader.typed(_table(reader, entry, "load"), LOAD_KEYS, where)
        flags = {k: (",".join(map(str, v)) if isinstance(v, list) else str(v) if k in _LIST_FLAGS else v)
                 for k, v in entry.items() if k not in ("endpoints", "name")}
        if "dataset" in flags:
            if flags["dataset"] not in datasets:
                raise reader.error(f"load #{i + 1}: dataset {flags['dataset']!r} is not in [datasets]", *where)
            flags["dataset"] = datasets[flags["dataset"]].path
        for key in ("texts", "tokenizer"):
            if key in flags:
                flags[key] = reader.file(flags[key], base, *where, key)
        suite.load.append(LoadJob(_folder(reader, "load", entry, i),
                                  reader.pick(entry.get("endpoints"), endpoints, where + ("endpoints",), "endpoint"), flags))
    jobs = [j.folder for j in (*suite.quality, *suite.identity, *suite.load)]
    twice = sorted({j for j in jobs if jobs.count(j) > 1})
    if twice:
        raise reader.error(f"two runs would write the same folder: {', '.join(twice)} (give each a name = \"...\")")
    if not jobs:
        raise reader.error("nothing to run: add a [[quality]], [[identity]] or [[load]] entry")
    return suite


_LIST_FLAGS = ("batch", "concurrency", "rate", "lengths", "documents")


def _folder(reader: _Reader, kind: str, entry: dict[str, Any], index: int, default: str | None = None) -> str:
    name = entry.get("name", default)
    if name is None:
        return kind if index == 0 else f"{kind}{index + 1}"
    if not _FOLDER_NAME.fullmatch(name):
        raise reader.error(f"{kind} #{index + 1}: name {name!r} may hold only letters, digits, _ . - "
                           "(it names a folder under --out)", kind)
    return f"{kind}-{name}"


def _table(reader: _Reader, entry: Any, section: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise reader.error(f"{section}: each entry must be a table ([[{section}]])", section)
    return entry


def _gate(reader: _Reader, table: dict[str, Any]) -> GateConfig:
    table = reader.typed(table, GATE_KEYS, ("gate",))

    def flag(key: str, parse):
        try:
            return parse(table[key])
        except UserError as exc:
            raise reader.error(f"gate.{key}: {exc}", "gate", key) from None

    drops = table.get("max_drop", {})
    items = [f"{m}={v}" for m, v in drops.items()] if isinstance(drops, dict) else [str(drops)]
    config = GateConfig(max_drop=flag("max_drop", lambda _: parse_max_drops(items)) if "max_drop" in table else {},
                        significance=table.get("significance", True))
    if "alpha" in table:
        config.alpha = float(table["alpha"])
        if not 0 < config.alpha < 1:
            raise reader.error("gate.alpha: must be between 0 and 1", "gate", "alpha")
    if "max_p99_increase" in table:
        config.max_p99_increase = flag("max_p99_increase", lambda v: parse_allowance(str(v), "max_p99_increase", percent_only=True))
    if "min_throughput_ratio" in table:
        config.min_throughput_ratio = flag("min_throughput_ratio", lambda v: parse_ratio(str(v), "min_throughput_ratio"))
    if "max_error_rate" in table:
        config.max_error_rate = flag("max_error_rate", lambda v: parse_error_rate(str(v), "max_error_rate"))
    match = table.get("match", {})
    if not all(isinstance(v, str) for v in match.values()):
        raise reader.error("gate.match: expected BASE_NAME = \"CUR_NAME\" pairs", "gate", "match")
    config.match = dict(match)
    return config


@dataclass
class SuiteOutcome:
    errors: list[str]  # jobs that ended with an error (one line each)
    identity_failed: list[str]  # identity runs with a failing pair
    comparison: Any = None  # bench.results.compare.Comparison (no checks when no baseline was given)
    failed_measurements: list[str] = field(default_factory=list)  # jobs that ran but failed to measure something
    load_errors: list[str] = field(default_factory=list)  # "job: endpoint point: why", a load point past its error limit

    @property
    def exit_code(self) -> int:
        """As every command's (bench/errors.py): 2 a job failed, 3 a measurement failed, 1 a check failed."""
        if self.errors:
            return EXIT_USER_ERROR
        if self.failed_measurements:
            return EXIT_MEASUREMENT_FAILED
        if self.identity_failed or self.load_errors or not self.comparison.passed:
            return EXIT_CHECK_FAILED
        return 0


def run_suite(suite: Suite, out: Path, baseline: Path | None, say=print, overwrite: bool = False) -> SuiteOutcome:
    """Run every job into OUT/<kind>-<name>/, then gate OUT against the baseline. A job that fails is
    said in one line and the others still run: everything measured is kept."""
    from bench.load.points import ERRORS
    from bench.load.run_command import problem_line
    from bench.results.compare import Comparison, compare_paths, locate_results
    from bench.results.store import read_results

    if baseline is not None and not baseline.exists():
        raise InputError(baseline, "no such baseline folder")  # checked before anything runs
    outcome = SuiteOutcome([], [])
    for folder, job in _jobs(suite, out):
        say(f"== {folder.name}")
        try:
            if isinstance(job, QualityJob):
                _run_quality(job, folder, overwrite)
            elif isinstance(job, IdentityJob):
                if not _run_identity(job, folder, say):
                    outcome.identity_failed.append(folder.name)
            else:
                outcome.load_errors += [f"{folder.name}: {problem_line(p)}" for p in _run_load(job, folder) if p.status == ERRORS]
        except MeasurementFailed as exc:
            outcome.failed_measurements.append(f"{folder.name}: {exc}")
            say(f"!! {folder.name}: {exc}")
        except UserError as exc:
            outcome.errors.append(f"{folder.name}: {exc}")
            say(f"!! {folder.name} failed: {exc}")
    if baseline is not None:
        outcome.comparison = compare_paths(baseline, out, suite.gate)
    else:  # the outputs a CI job expects still appear; this run can be the next one's baseline
        runs = [(key, read_results(path)) for key, path in locate_results(out).items()] if any(out.rglob("results.jsonl")) else []
        outcome.comparison = Comparison("(none)", str(out), [], ["no baseline given: nothing is gated"], runs)
    outcome.comparison.notes += [f"{name}: a pair of endpoints fails its identity thresholds" for name in outcome.identity_failed]
    outcome.comparison.notes += [f"failed: {line}" for line in outcome.errors + outcome.failed_measurements]
    outcome.comparison.notes += [f"errors past the limit: {line}" for line in outcome.load_errors]
    return outcome


def _jobs(suite: Suite, out: Path):
    yield from ((out / j.folder, j) for j in (*suite.quality, *suite.identity, *suite.load))


def _run_quality(job: QualityJob, folder: Path, overwrite: bool) -> None:
    from bench.quality.run_command import QualityRequest, quality_command

    quality_command(QualityRequest(dataset=job.dataset.path, split=job.dataset.split, targets=job.targets, out=folder,
                                   max_queries=job.dataset.max_queries, max_docs=job.dataset.max_docs,
                                   overwrite=overwrite, **job.options))


def _run_identity(job: IdentityJob, folder: Path, say) -> bool:
    from bench.endpoints.spec import parse_spec
    from bench.identity import IdentityRequest, from_dataset, from_texts, run_identity
    from bench.identity.report import render
    from bench.identity.results import identity_results
    from bench.report import write_outputs

    limit = job.options.get("limit")
    inputs = from_texts(job.texts, limit) if job.texts is not None else from_dataset(job.dataset, limit)
    report = run_identity(IdentityRequest([parse_spec(s) for s in job.endpoints], inputs,
                                          reference=job.options.get("reference"), dtype=job.options.get("dtype"),
                                          tokenizer=job.options.get("tokenizer")))
    results = identity_results(report, folder / "results.jsonl")
    say(render(results))
    write_outputs(results)  # results.jsonl, then its report
    return report.passed


def _run_load(job: LoadJob, folder: Path) -> list:
    from bench.load.run_command import LoadRequest, load_command

    return load_command(LoadRequest(endpoints=job.endpoints, out=folder, **job.flags))
