"""Line-oriented reading shared by every loader: gzip, strict UTF-8, and errors that name file and line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any, Iterator

from bench.errors import InputError
from bench.quality.answers import compile_answer_regex, is_regex_answer


def find_file(directory: Path, stem: str) -> Path | None:
    """`stem` or `stem.gz` inside `directory`, whichever exists."""
    for candidate in (directory / stem, directory / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without newline) for every line; blank lines are skipped."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(path, f"not UTF-8 (byte {exc.start + 1} of the line)", number) from None
                line = line.rstrip("\r\n")
                if line.strip():
                    yield number, line
    except OSError as exc:  # includes gzip.BadGzipFile
        raise InputError(path, f"cannot read: {exc}") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in read_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"malformed JSON ({exc.msg} at column {exc.colno})", number) from None
        if not isinstance(record, dict):
            raise InputError(path, "expected a JSON object", number)
        yield number, record


def require_str(record: dict[str, Any], field: str, path: Path, line: int) -> str:
    """A required field, as text (ids may be written as numbers)."""
    if field not in record or record[field] is None:
        raise InputError(path, f"missing field {field!r}", line)
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(path, f"field {field!r} must be a string", line)
    return str(value)


def parse_grade(text: str, path: Path, line: int) -> int:
    try:
        return int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise InputError(path, f"relevance {text!r} is not a number", line) from None
        if not value.is_integer():
            raise InputError(path, f"relevance {text!r} is not an integer grade", line) from None
        return int(value)


def optional_answers(record: dict[str, Any], path: Path, line: int) -> list[str] | None:
    """The `answers` field: a list of non-empty strings, `/pattern/` for a regular expression; None when absent."""
    value = record.get("answers")
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(path, "field 'answers' must be a list of strings", line)
    answers = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise InputError(path, f"answer {item!r} must be a string", line)
        answer = str(item)
        if not answer.strip():
            raise InputError(path, "empty answer", line)
        if is_regex_answer(answer):
            try:
                compile_answer_regex(answer)
            except re.error as exc:
                raise InputError(path, f"answer {answer!r}: invalid regular expression ({exc})", line) from None
        answers.append(answer)
    return answers
