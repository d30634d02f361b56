"""The endpoint clients' view of the one HTTP layer (`bench/core/http.py`): a client bound to one endpoint
name, requests by absolute URL, bodies read through the same checks as every other server's."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from bench.core.errors import ServerError
from bench.core.http import HttpClient, Reply, auth_headers, error_message, key_from_env, one_line
from bench.core.http import HttpStatusError as EndpointHTTPError

__all__ = ["EndpointHTTPError", "HttpEndpoint", "endpoint_auth", "error_message", "key_from_env"]


def endpoint_auth(name: str, url: str, key_env: str | None) -> tuple[str, dict[str, str]]:
    """(the endpoint's URL without credentials, its auth headers): what the API clients and the load
    generator both send."""
    url, headers = auth_headers(
        f"endpoint {name}", url.rstrip("/"), key_from_env(f"endpoint {name}", key_env), key_name=f"key_env={key_env}"
    )
    return url.rstrip("/"), headers


class HttpEndpoint:
    """An HTTP client bound to one endpoint name and base URL (`url`: without the credentials the URL
    was given with); auth from those credentials or the key in `key_env` (`endpoint_auth`)."""

    def __init__(self, name: str, url: str, key_env: str | None = None, timeout_s: float = 120.0):
        self.name = name
        self.url, headers = endpoint_auth(name, url, key_env)
        self.http = HttpClient(name, headers=headers, timeout_s=timeout_s, key_env=key_env)
        self.client = self.http.httpx

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, url: str, body: Any = None) -> tuple[httpx.Response, float]:
        """Send one request; return the successful response and its wall time in ms."""
        started = time.perf_counter()
        response = self.http.send(method, url, json=body)
        wall_ms = (time.perf_counter() - started) * 1000.0
        if response.status_code >= 400:
            raise self.http.status_error(method, url, response)
        return response, wall_ms

    def json_of(self, response: httpx.Response) -> Any:
        """The JSON body, or one clear error when the endpoint answered HTML or other text."""
        return self.http.reply(response).body

    def shape_error(self, url: str, expected: str, body: Any) -> ServerError:
        return Reply(self.name, url, 200, body, one_line(json.dumps(body), 160)).wrong_shape(f"expected {expected}")
