"""Secrets never leave the process: one masking function for every writer (results files, reports,
logs, error lines, stdout/stderr).

Two rules, both applied by `mask`:
- by shape: credentials in a URL (`scheme://user:pass@host`), secret-named query parameters
  (`?api_key=…`, `&token=…`), `Authorization: Bearer …` / `X-API-Key: …` headers, and `sk-…` keys;
- by value: every secret ragbench read from the environment (`secret_from_env`) or was handed
  (`register_secret`), wherever it appears, e.g. echoed back in a server's error body, and every form a
  secret takes on the way (percent-encoded in a URL, escaped in JSON; the HTTP layer registers what it
  sends, such as the base64 of `user:password` in `Authorization: Basic`).
Data adds one rule per kind: in free-form dicts (headers, params, a server's settings) a value under a
secret-looking key is masked whole (`mask_data`); a typed record's own fields are masked by value, and whole
only where the field is marked `SECRET` (`mask_fields`): a figure named `flops_per_token` is not a token.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import html
import json
import os
import re
import types
import typing
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "***"

# A typed record's field metadata (`field(metadata=SECRET)`), read by `mask_fields`. Unmarked fields are masked by
# value. VERBATIM: identifiers and figures copied as they are, since masking could change them (HDR encodings are
# base64, which a registered secret's base64 form could match).
SECRET = {"mask": "secret"}
VERBATIM = {"mask": "verbatim"}

# Parameter / field names that hold secrets (matched as whole names, case-insensitive). Not `tokens`:
# that names counts (prompt_tokens), which are figures.
SECRET_NAME = re.compile(
    r"(?:[A-Za-z0-9_-]*[_-])?(?:api[_-]?keys?|keys?|token|secrets?|passwords?|passwd|pwd|auth|authorization|credentials?)",
    re.IGNORECASE,
)

# Userinfo: `user:password@` or `token@`. After `user:`, a password may hold an unescaped `/`, `?` or `#`
# (`http://u:p/w@host`): such a URL cannot be parsed, and the error line that names it must not show the password
# (a path with an `@`, `http://host/@name`, is left alone). Quotes and brackets end a URL in JSON or markup.
# `:/`: a URL that went through a path normalisation.
_URL_USERINFO = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://?)"
    r"(?:[^/@\s\"'<>:?#]*:[^@\s\"'<>]+|[^/@\s\"'<>?#]+)@"
)
_QUERY_SECRET = re.compile(rf"(?P<prefix>(?:^|[?&;\s\"'])(?:{SECRET_NAME.pattern})=)[^&#\s\"']+", re.IGNORECASE)
# A header as written on the wire (`Authorization: Bearer x`) or echoed as a dict (`'Authorization': 'Bearer x'`).
_HEADER_SECRET = re.compile(
    r"(?P<prefix>\b(?:authorization|x-api-key|api-key)[\"']?\s*[:=]\s*[\"']?(?:bearer\s+|basic\s+)?)"
    r"[^\s,;\"']+",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<prefix>\bbearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE)
_BASIC = re.compile(r"(?P<prefix>\bBasic\s+)(?P<token>[A-Za-z0-9+/]{4,}={0,2})")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")

_known: set[str] = set()


def _forms(value: str) -> set[str]:
    """The forms a secret takes when a server or a writer echoes it: as is; percent-encoded (either case of hex
    digits, `+` for spaces); JSON-escaped (`\\u00e9` or `\\u00E9`, `\\/` or `/`); HTML-escaped; base64."""
    percent = {quote(value, safe=""), quote(value), quote_plus(value)}
    percent |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form) for form in percent}
    escaped = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    escaped |= {re.sub(r"\\u[0-9a-f]{4}", lambda m: m.group(0).upper().replace("\\U", "\\u"), form) for form in escaped}
    escaped |= {form.replace("/", "\\/") for form in escaped}
    raw = value.encode()
    encoded = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    encoded |= {form.rstrip("=") for form in encoded}
    return {value, html.escape(value), html.escape(value, quote=False)} | percent | escaped | encoded


def register_secret(value: str | None) -> None:
    """Remember a secret value, and every form it takes on the way (`_forms`), so that `mask` removes it
    wherever it shows up later."""
    if not value:
        return
    _known.update(form for form in _forms(value) if len(form) >= 4)  # shorter strings would mask ordinary text


def secret_from_env(name: str) -> str | None:
    """The value of an environment variable that holds a secret (registered for masking), or None."""
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    register_secret(value)
    return value


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.fullmatch(name))


def mask(text: str) -> str:
    """`text` with every credential replaced by `***`."""
    if not text:
        return text
    for value in sorted(_known, key=len, reverse=True):
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    text = _QUERY_SECRET.sub(lambda m: m.group("prefix") + MASK, text)
    text = _HEADER_SECRET.sub(lambda m: m.group("prefix") + MASK, text)
    text = _BEARER.sub(lambda m: m.group("prefix") + MASK, text)
    text = _BASIC.sub(lambda m: m.group("prefix") + MASK if _is_basic_token(m.group("token")) else m.group(0), text)
    return _SK_KEY.sub(MASK, text)


def _is_basic_token(token: str) -> bool:
    """Base64 of `user:password`, as `Authorization: Basic` carries it (not the word "Basic" in prose)."""
    try:
        return b":" in base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        return False


def _could_be_secret(value: Any) -> bool:
    """A non-empty string or a number: a flag (`"auth": true`) or a nested structure is not a secret itself."""
    return (isinstance(value, str) and value != "") or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _masked_secret(value: Any) -> Any:
    """The value of a secret-named field: masked whole, or item by item for a list of keys."""
    if isinstance(value, (list, tuple)):
        return [_masked_secret(v) for v in value]
    return MASK if _could_be_secret(value) else mask_data(value)


def mask_data(value: Any) -> Any:
    """A copy of JSON-like data with secrets masked: values under secret-named keys become `***`,
    every string goes through `mask`."""
    if isinstance(value, dict):
        return {
            k: _masked_secret(v) if isinstance(k, str) and is_secret_name(k) else mask_data(v) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [mask_data(v) for v in value]
    if isinstance(value, str):
        return mask(value)
    return value


def mask_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """A typed record's fields (`dataclasses.asdict`, or a line read back) with secrets masked: a field marked
    SECRET whole, a VERBATIM one not at all, a nested block by its own fields, every other value by `mask_data`
    (strings by value and shape; dicts, whose keys no schema declares, also by key name). Keys `cls` does not
    declare (a newer writer's) are free-form too."""
    maskers = _field_maskers(cls)
    # VERBATIM fields go last, where the writer has always put them: a record is written as the same line.
    kept = {k: v for k, v in data.items() if maskers.get(k) is _as_is}
    return {**{k: maskers.get(k, mask_data)(v) for k, v in data.items() if k not in kept}, **kept}


@functools.cache
def _field_maskers(cls: type) -> dict[str, Callable[[Any], Any]]:
    hints = typing.get_type_hints(cls)
    maskers: dict[str, Callable[[Any], Any]] = {}
    for f in dataclasses.fields(cls):
        rule = f.metadata.get("mask")
        maskers[f.name] = (
            _masked_secret if rule == "secret" else _as_is if rule == "verbatim" else _masker(hints[f.name])
        )
    return maskers


def _as_is(value: Any) -> Any:
    return value


def _masker(hint: Any) -> Callable[[Any], Any]:
    """How a field of type `hint` is masked; a value of another shape (a hand-edited file) goes to `mask_data`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        block = hint
        return lambda value: mask_fields(block, value) if isinstance(value, dict) else mask_data(value)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _masker(inner[0]) if len(inner) == 1 else mask_data
    if origin is list and args:
        item = _masker(args[0])
        return lambda value: [item(v) for v in value] if isinstance(value, list) else mask_data(value)
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        entry = _masker(args[1])
        return lambda value: {k: entry(v) for k, v in value.items()} if isinstance(value, dict) else mask_data(value)
    return mask_data


class MaskedStream:
    """A text stream (stdout, stderr) whose every line passes through `mask` before it is written.

    Whole lines are masked, so a secret written in pieces is still caught; a partial line goes out
    (masked) on `flush`, which progress bars do after each refresh. Everything else is the wrapped
    stream's (isatty, encoding, fileno...).
    """

    def __init__(self, stream: Any):
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending += text
        if "\n" in self._pending:
            lines, self._pending = self._pending.rsplit("\n", 1)
            self._stream.write(mask(lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(mask(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
