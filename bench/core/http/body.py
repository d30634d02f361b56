"""Reading a server's answer body: JSON decoded and checked for shape, error bodies read for the server's words.

Every body we read goes through `Reply`: JSON that is not JSON (HTML, truncated, nested too deeply for Python's
parser), or JSON of another shape, ends in one line naming the server, the request and what came back — never a
JSONDecodeError, RecursionError or KeyError traceback. `loads` is the one JSON decode of a server's bytes, for the
paths that read them without httpx too. `error_message` finds the server's own words in any of the error-body
shapes servers use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from bench.core.errors import ServerError
from bench.core.secrets import mask

_REQUIRED = object()


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def error_message(response: httpx.Response) -> tuple[str, str | None]:
    """(message, error_type) from any error body shape, or the plain text itself.

    TEI answers `{error, error_type}` (and plain text from its HTTP layer), OpenAI-compatible servers
    `{error: {message, type}}` or `{message, code, type}`, FastAPI servers `{detail}`."""
    text = response.text
    try:
        body = loads(text)
    except ValueError:
        return one_line(text) or response.reason_phrase, None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):  # OpenAI / LiteLLM
            return one_line(str(error.get("message", error))), _str_or_none(error.get("type"))
        if isinstance(error, str) and error:  # TEI
            return one_line(error), _str_or_none(body.get("error_type"))
        if body.get("message"):  # TEI's OpenAI route, LightRAG
            return one_line(str(body["message"])), _str_or_none(body.get("type"))
        if body.get("detail"):  # FastAPI
            detail = body["detail"]
            return one_line(detail if isinstance(detail, str) else json.dumps(detail)), None
    return one_line(text) or response.reason_phrase, None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


class JsonTooDeep(ValueError):
    """JSON nested deeper than Python's parser can follow: a broken answer like any other."""


def loads(data: bytes | str) -> Any:
    """`json.loads` of a server's bytes, where nesting too deep to parse is a ValueError (JsonTooDeep), not a
    RecursionError: `[` repeated 100,000 times is a bad answer, one line like truncated JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise JsonTooDeep("JSON nested too deeply to read") from None


def parse_json(response: httpx.Response) -> tuple[Any, str]:
    """(body, "") for a JSON body; (None, what came instead) for HTML, text, broken JSON or nothing."""
    try:
        return loads(response.content), ""
    except (ValueError, UnicodeDecodeError) as exc:
        kind = response.headers.get("content-type", "no content-type")
        if not response.content:
            return None, "answered an empty body"
        if isinstance(exc, JsonTooDeep):
            return None, "answered JSON nested too deeply to read"
        if "json" in kind:
            return (
                None,
                f"answered broken JSON ({getattr(exc, 'msg', type(exc).__name__)} at byte {getattr(exc, 'pos', '?')})",
            )
        return None, f"answered {kind}, not JSON"


@dataclass
class Reply:
    """A successful answer whose body was JSON. `get` reads a field and checks its type, so a body of
    another shape is one clear error instead of a KeyError deep in a driver."""

    server: str
    request: str  # "POST /query/data"
    status: int
    body: Any
    text: str
    created: list[str] | None = None

    def get(self, *path: str | int, kind: type | tuple[type, ...] = object, default: Any = _REQUIRED) -> Any:
        """`body[path[0]][path[1]]...`, which must be a `kind`. Missing or null: `default` where one is given."""
        value = self.body
        for i, key in enumerate(path):
            container_ok = isinstance(value, list) if isinstance(key, int) else isinstance(value, dict)
            if not container_ok:
                raise self.wrong_shape(
                    f"{self._name(path[:i]) or 'the body'} is {_kind(value)}, not "
                    f"{'a list' if isinstance(key, int) else 'an object'}"
                )
            present = (-len(value) <= key < len(value)) if isinstance(key, int) else key in value
            value = value[key] if present else None
            if value is None and default is not _REQUIRED:
                return default
            if not present:
                raise self.wrong_shape(f"no {self._name(path[: i + 1])}")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # JSON true/false is a bool, which Python counts as an int: a number only where a boolean may stand
        if not isinstance(value, kind) or (isinstance(value, bool) and not {bool, object} & set(kinds)):
            raise self.wrong_shape(f"{self._name(path) or 'the body'} is {_kind(value)}, not {_kind_name(kind)}")
        return value

    def wrong_shape(self, what: str) -> ServerError:
        return ServerError(
            self.server,
            mask(f"{self.request} answered JSON of an unexpected shape ({what}): {one_line(self.text, 160)!r}"),
            created=self.created,
        )

    @staticmethod
    def _name(path: tuple[str | int, ...]) -> str:
        return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else str(k)) for i, k in enumerate(path))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {
            dict: "an object",
            list: "a list",
            str: "a string",
            bool: "a boolean",
            int: "an integer",
            float: "a number",
        }.get(k, k.__name__)
        for k in kinds
    )
