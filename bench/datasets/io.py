"""Reading every text file ragbench takes (datasets, qrels, run files, identity texts): one rule for all.

gzip when the name ends in `.gz`, strict UTF-8, a leading byte-order mark dropped (as Python's
`utf-8-sig` does), and every problem an `InputError` naming file and line.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from bench.core.errors import InputError
from bench.datasets.answers import SEP, compile_answer_regex, is_regex_answer, token_string

BOM = "\ufeff"


def find_file(directory: Path, stem: str) -> Path | None:
    """`stem` or `stem.gz` inside `directory`, whichever exists (a folder of that name is an error)."""
    for candidate in (directory / stem, directory / f"{stem}.gz"):
        if candidate.is_dir():
            raise InputError(candidate, "is a folder, expected a file")
        if candidate.is_file():
            return candidate
    return None


def require_file(path: Path, what: str) -> Path:
    """`path` must be an existing file (not a folder); `what` names it in the error."""
    if path.is_dir():
        raise InputError(path, f"is a folder, expected a {what}")
    if not path.is_file():
        raise InputError(path, f"no such {what}")
    return path


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without newline) for every line; blank lines are skipped."""
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(path, f"not UTF-8 (byte {exc.start + 1} of the line)", number) from None
                if number == 1:
                    line = line.removeprefix(BOM)
                line = line.rstrip("\r\n")
                if line.strip():
                    yield number, line
    except IsADirectoryError:
        raise InputError(path, "is a folder, expected a file") from None
    except FileNotFoundError:
        raise InputError(path, "no such file") from None
    except (EOFError, zlib.error) as exc:  # a truncated or corrupt .gz
        raise InputError(path, f"corrupt or truncated gzip data ({exc})", number + 1) from None
    except OSError as exc:  # includes gzip.BadGzipFile and permission errors
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """Each line's JSON object and its number; its values are unchecked (object) until `require_*` reads them."""
    for number, line in read_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"malformed JSON ({exc.msg} at column {exc.colno})", number) from None
        except (ValueError, RecursionError) as exc:  # an integer too long to convert, nesting too deep
            raise InputError(path, f"malformed JSON ({exc})", number) from None
        if not isinstance(record, dict):
            raise InputError(path, "expected a JSON object", number)
        yield number, record


def require_str(record: dict[str, object], field: str, path: Path, line: int) -> str:
    """A required field, as text (ids may be written as numbers)."""
    if field not in record or record[field] is None:
        raise InputError(path, f"missing field {field!r}", line)
    value = record[field]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(path, f"field {field!r} must be a string", line)
    return str(value)


def check_id(value: str, what: str, path: Path, line: int | None) -> str:
    """Query and document ids become columns of TREC run and qrels files, which split on white space:
    an id that is empty or holds white space could not be read back, so it is refused where it is read."""
    if not value:
        raise InputError(path, f"empty {what}", line)
    if any(c.isspace() for c in value):
        raise InputError(path, f"{what} {value!r} contains white space (TREC files could not hold it)", line)
    return value


def require_id(record: dict[str, object], field: str, what: str, path: Path, line: int) -> str:
    return check_id(require_str(record, field, path, line), what, path, line)


MAX_GRADE = 2**31 - 1  # trec_eval keeps grades in a C int


def parse_grade(value: str | int | float, path: Path, line: int) -> int:
    """A relevance grade: an integer (written `2` or `2.0`, or a JSON number) that fits trec_eval's C int."""
    if isinstance(value, str):
        text = value
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise InputError(path, f"relevance {text!r} is not a number", line) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(path, f"relevance {value!r} is not a number", line)
    if isinstance(value, float) and not value.is_integer():  # also nan and inf
        raise InputError(path, f"relevance {value!r} is not an integer grade", line)
    if abs(value) > MAX_GRADE:
        raise InputError(path, f"relevance {value!r} is out of range", line)
    return int(value)


def optional_answers(record: dict[str, object], path: Path, line: int) -> list[str] | None:
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
        if not is_regex_answer(answer) and token_string(answer) == SEP:  # e.g. only zero-width characters
            raise InputError(path, f"answer {answer!r} has no letters, digits or symbols to match", line)
        if is_regex_answer(answer):
            try:
                compile_answer_regex(answer)
            except re.error as exc:
                raise InputError(path, f"answer {answer!r}: invalid regular expression ({exc})", line) from None
        answers.append(answer)
    return answers
