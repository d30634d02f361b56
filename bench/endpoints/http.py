"""HTTP plumbing shared by the endpoint clients: keys from the environment, errors as one clear line.

Servers disagree on error bodies: TEI answers `{error, error_type}` (and plain text from its HTTP
layer), OpenAI-compatible servers `{error: {message}}` or `{message, code, type}`, FastAPI servers
`{detail}`. `EndpointHTTPError` carries the status and the message found in any of them.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from bench.errors import ServerError, UserError
from bench.secrets import secret_from_env


class EndpointHTTPError(ServerError):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, server: str, status: int, message: str, error_type: str | None = None, url: str = ""):
        self.status = status
        self.message = message
        self.error_type = error_type
        self.url = url
        kind = f" {error_type}" if error_type else ""
        super().__init__(server, f"HTTP {status}{kind} from {url}: {message}")


def key_from_env(endpoint: str, key_env: str | None) -> str | None:
    """The API key named by `key_env`; secrets never travel in specs or arguments."""
    if not key_env:
        return None
    value = secret_from_env(key_env)
    if not value:
        raise UserError(f"endpoint {endpoint}: environment variable {key_env} (key_env) is not set")
    return value


def error_message(response: httpx.Response) -> tuple[str, str | None]:
    """(message, error_type) from any of the error body shapes, or the plain text itself."""
    text = response.text
    try:
        body = json.loads(text)
    except ValueError:
        return _one_line(text) or response.reason_phrase, None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):  # OpenAI / LiteLLM: {"error": {"message", "type", "code"}}
            return _one_line(str(error.get("message", error))), error.get("type")
        if isinstance(error, str):  # TEI: {"error", "error_type"}
            return _one_line(error), body.get("error_type")
        if "message" in body:  # TEI's OpenAI route: {"message", "code", "type"}
            return _one_line(str(body["message"])), body.get("type")
        if "detail" in body:  # FastAPI
            return _one_line(json.dumps(body["detail"]) if not isinstance(body["detail"], str) else body["detail"]), None
    return _one_line(text), None


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class HttpEndpoint:
    """An httpx client bound to one endpoint name and base URL."""

    def __init__(self, name: str, url: str, key_env: str | None = None, timeout_s: float = 120.0):
        self.name = name
        self.url = url.rstrip("/")
        headers = {}
        key = key_from_env(name, key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self.client = httpx.Client(timeout=timeout_s, headers=headers)

    def close(self) -> None:
        self.client.close()

    def request(self, method: str, url: str, body: Any = None) -> tuple[httpx.Response, float]:
        """Send one request; return the successful response and its wall time in ms."""
        started = time.perf_counter()
        try:
            response = self.client.request(method, url, json=body)
        except httpx.TimeoutException as exc:
            raise ServerError(self.name, f"no answer from {url} within {self.client.timeout.read} s") from exc
        except httpx.HTTPError as exc:
            raise ServerError(self.name, f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
        wall_ms = (time.perf_counter() - started) * 1000.0
        if response.status_code >= 400:
            message, error_type = error_message(response)
            raise EndpointHTTPError(self.name, response.status_code, message, error_type, url)
        return response, wall_ms

    def json_of(self, response: httpx.Response) -> Any:
        """The JSON body, or a clear error when the endpoint answered HTML or other text."""
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type", "no content-type")
            raise ServerError(
                self.name, f"{response.request.url} answered {kind}, not JSON: {_one_line(response.text, 120)!r}"
            ) from None

    def shape_error(self, url: str, expected: str, body: Any) -> ServerError:
        return ServerError(self.name, f"{url} answered an unexpected shape (expected {expected}): {_one_line(json.dumps(body), 160)}")
