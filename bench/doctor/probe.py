"""One probe of a hop: a tiny request sent as the upstream component sends it, and what came back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.core.errors import ServerError
from bench.core.http import HttpClient, auth_headers, error_message, parse_json

PING = ["ragbench doctor ping"]


@dataclass
class Probe:
    status: int | None  # None: no HTTP answer
    body: Any = None  # parsed JSON, or None
    message: str = ""  # error message from any body shape, or the transport error

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass
class Facts:
    """What one hop learned that another hop's checks need (e.g. TEI's batch limit for Open WebUI)."""

    tei_batch_limit: int | None = None


def probe(client: HttpClient, method: str, url: str, body: Any = None, key: str | None = None) -> Probe:
    """One request to `url` (credentials in it, or `key`, authenticate it), whatever it answers."""
    url, headers = auth_headers(f"doctor: {url}", url, key)
    try:
        response = client.send(method, url, json=body, headers=headers)
    except ServerError as exc:
        return Probe(None, message=str(exc).removeprefix(f"{client.server}: "))
    parsed, problem = parse_json(response)
    message = error_message(response)[0] if response.status_code >= 400 else problem
    return Probe(response.status_code, parsed, message)


def count_setting(value: Any, default: int) -> int:
    """A server's count setting, or `default` where it sent none or something that is not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def describe(p: Probe) -> str:
    return f"HTTP {p.status}: {p.message}" if p.status is not None else f"no answer ({p.message})"
