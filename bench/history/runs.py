"""The runs of a history: results files found under the paths given, read, and put in order.

`--by created` orders runs by their header's `created` stamp; `--by label:KEY` by the header's `labels[KEY]`:
numbers as numbers (a CI run id, a build number), any other value (a commit) by the first run that carries it,
so the runs of one commit stay together in the order the commits were first measured; a `nan` or `inf` among
numbered runs has no place among them: one input error. A run is named in the
reports by that label, else by its `commit`, `run` or `ci_run` label (the first it carries), else by its stamp.
"""

from __future__ import annotations

import glob
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.core.errors import InputError, UserError
from bench.results.outdir import RESULTS_FILE
from bench.results.schema import EndStatus
from bench.results.store import Results, read_results

CREATED = "created"
LABEL_PREFIX = "label:"
COMMIT = "commit"
NAMING_LABELS = (COMMIT, "run", "ci_run")  # a run is named by the first it carries, after the ordering label


@dataclass(frozen=True)
class HistoryRun:
    """One results file of the history, at its place in the order."""

    index: int
    path: Path
    command: str
    created: str
    labels: dict[str, str] = field(default_factory=dict)
    name: str = ""  # how reports name it: the ordering label, else a naming label (commit, run, ci_run), else the stamp


def parse_order(text: str) -> str | None:
    """`created` -> None; `label:KEY` -> KEY; anything else is a usage error."""
    if text == CREATED:
        return None
    if text.startswith(LABEL_PREFIX) and text[len(LABEL_PREFIX) :].strip():
        return text[len(LABEL_PREFIX) :].strip()
    raise UserError(f"--by {text!r}: expected created or label:KEY (label:commit)")


def header_labels(results: Results) -> dict[str, str]:
    """The run header's labels (`--label KEY=VALUE`); empty for files written before runs carried them."""
    labels = getattr(results.header, "labels", None)
    if not isinstance(labels, dict):
        return {}
    return {str(k): str(v) for k, v in labels.items()}


def results_files(argument: str) -> list[Path]:
    """The results files one argument names: a file, a folder (every results.jsonl in it or below), or a glob."""
    # glob.glob, not Path.glob: a CI step passes absolute patterns (`$RUNNER_TEMP/artifacts/*/results.jsonl`)
    matches = sorted(glob.glob(argument, recursive=True)) if glob.has_magic(argument) else [argument]  # noqa: PTH207
    if not matches:
        raise InputError(argument, "no file or folder matches this pattern")
    found: list[Path] = []
    for match in map(Path, matches):
        if match.is_file():
            found.append(match)
        elif match.is_dir():
            inside = sorted(match.rglob(RESULTS_FILE))
            if not inside and not glob.has_magic(argument):
                raise InputError(match, f"no {RESULTS_FILE} in this folder or below it")
            found += inside
        else:
            raise InputError(match, "no such results file or folder")
    return found


def read_runs(arguments: Sequence[str]) -> tuple[list[Results], list[str]]:
    """Every complete run the arguments name (a file named twice is read once) and notes on the runs left out."""
    seen: set[Path] = set()
    runs: list[Results] = []
    notes: list[str] = []
    for argument in arguments:
        for path in results_files(argument):
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            results = read_results(path)
            if results.end is None or results.end.status != EndStatus.COMPLETE:
                status = results.end.status if results.end else "no end record"
                notes.append(f"{path}: left out, the run did not complete ({status})")
                continue
            runs.append(results)
    if not runs:
        raise UserError("no complete run to read a history from")
    return runs, notes


def order_runs(runs: list[Results], label: str | None) -> list[tuple[HistoryRun, Results]]:
    """The runs in history order, each with its place and name."""
    if label is not None:
        missing = [r.path for r in runs if label not in header_labels(r)]
        if missing:
            raise InputError(missing[0], f"--by label:{label}: the run header has no {label!r} label")
    by_created = sorted(runs, key=lambda r: (run_instant(r), str(r.path)))
    if label is None:
        ordered = by_created
    else:
        values = [header_labels(r)[label] for r in by_created]
        _check_finite(label, values, by_created)
        if all(_is_number(v) for v in values):
            ordered = sorted(by_created, key=lambda r: float(header_labels(r)[label]))
        else:
            first = {v: i for i, v in reversed(list(enumerate(values)))}
            ordered = sorted(by_created, key=lambda r: first[header_labels(r)[label]])
    placed: list[tuple[HistoryRun, Results]] = []
    for index, results in enumerate(ordered):
        labels = header_labels(results)
        named = [label] if label else []
        name = next((labels[k] for k in (*named, *NAMING_LABELS) if labels.get(k)), results.header.created)
        run = HistoryRun(index, results.path, results.header.command, results.header.created, labels, name)
        placed.append((run, results))
    return placed


def _check_finite(label: str, values: list[str], runs: list[Results]) -> None:
    """Run numbers beside a `nan` or `inf`: no place for it among them (taken as a word, 9, 10, inf, nan ordered
    as first measured put the newest run at 9): one input error naming the run, not a guessed order."""
    if not any(_is_number(v) for v in values):
        return
    for value, results in zip(values, runs, strict=True):
        if _is_float(value) and not _is_number(value):
            numbers = sorted({v for v in values if _is_number(v)}, key=float)
            shown = ", ".join(numbers[:3]) + (", …" if len(numbers) > 3 else "")
            raise InputError(
                results.path,
                f"--by label:{label}: {value!r} is not a finite number, and other runs are numbered ({shown}): "
                "give this run a number or leave it out",
            )


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_number(text: str) -> bool:
    """A finite number (a CI run id, a build number): `nan`, `inf` and `infinity` are words, ordered as such."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def run_instant(results: Results) -> datetime:
    """The header's `created` stamp as an instant: `-05:00` and `Z` stamps compared in time, not as text (a stamp
    without a zone is taken as UTC)."""
    try:
        stamp = datetime.fromisoformat(results.header.created)
    except (TypeError, ValueError):
        raise InputError(results.path, f"created {results.header.created!r}: not an ISO 8601 stamp") from None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)
