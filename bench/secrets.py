"""Secrets never leave the process: one masking function for every writer (results files, reports,
logs, error lines, stdout/stderr).

Two rules, both applied by `mask`:
- by shape: credentials in a URL (`scheme://user:pass@host`), secret-named query parameters
  (`?api_key=…`, `&token=…`), `Authorization: Bearer …` / `X-API-Key: …` headers, and `sk-…` keys;
- by value: every secret ragbench read from the environment (`secret_from_env`) or was handed
  (`register_secret`), wherever it appears, e.g. echoed back in a server's error body.
"""

from __future__ import annotations

import os
import re
from typing import Any

MASK = "***"

# Parameter / field names that hold secrets (matched as whole names, case-insensitive).
SECRET_NAME = re.compile(
    r"(?:[A-Za-z0-9_-]*[_-])?(?:api[_-]?key|key|token|secret|password|passwd|pwd|auth|authorization|credentials?)",
    re.IGNORECASE,
)

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s?#]+@")
_QUERY_SECRET = re.compile(
    rf"(?P<prefix>(?:^|[?&;\s\"'])(?:{SECRET_NAME.pattern})=)[^&#\s\"']+", re.IGNORECASE
)
_HEADER_SECRET = re.compile(r"(?P<prefix>\b(?:authorization|x-api-key|api-key)\s*[:=]\s*(?:bearer\s+|basic\s+)?)[^\s,;\"']+",
                            re.IGNORECASE)
_BEARER = re.compile(r"(?P<prefix>\bbearer\s+)[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE)
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")

_known: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret value so that `mask` removes it wherever it shows up later."""
    if value and len(value) >= 4:  # shorter strings would mask ordinary text
        _known.add(value)


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
    return _SK_KEY.sub(MASK, text)


def mask_data(value: Any) -> Any:
    """A copy of JSON-like data with secrets masked: values under secret-named keys become `***`,
    every string goes through `mask`."""
    if isinstance(value, dict):
        return {k: (MASK if isinstance(k, str) and is_secret_name(k) and v not in (None, "", False) and not isinstance(v, (dict, list))
                    else mask_data(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_data(v) for v in value]
    if isinstance(value, str):
        return mask(value)
    return value
