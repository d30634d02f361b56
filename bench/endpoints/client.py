"""The endpoint clients' view of the one HTTP layer (`bench/core/http/`): a client bound to one endpoint
name, requests by absolute URL, bodies read through the same checks as every other server's."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import httpx

from bench.core.errors import ServerError
from bench.core.http import DEFAULT_CAP, BodyCap, HttpClient, Reply, auth_headers, key_from_env, one_line

RETRIED = (429, 503)  # "busy": no permit free, or overloaded; anything else is the request's own error
RETRIES = 6
MAX_WAIT_S = 30.0  # a Retry-After beyond this is not waited for: the request fails instead


def retry_wait(response: httpx.Response, attempt: int) -> float | None:
    """Seconds to wait before retrying a busy answer: its Retry-After (seconds) when it gives one, else a
    bounded exponential backoff; None when it must not be retried (not busy, out of attempts, a wait too long)."""
    if response.status_code not in RETRIED or attempt >= RETRIES:
        return None
    try:
        wait = float(response.headers["retry-after"])
    except (KeyError, ValueError):
        wait = min(0.05 * 2**attempt, 2.0)
    return wait if 0 <= wait <= MAX_WAIT_S else None


def endpoint_auth(name: str, url: str, key_env: str | None) -> tuple[str, dict[str, str]]:
    """(the endpoint's URL without credentials, its auth headers): what the API clients and the load
    generator both send."""
    url, headers = auth_headers(
        f"endpoint {name}", url.rstrip("/"), key_from_env(f"endpoint {name}", key_env), key_name=f"key_env={key_env}"
    )
    return url.rstrip("/"), headers


class HttpEndpoint:
    """An HTTP client bound to one endpoint name and base URL (`url`: without the credentials the URL
    was given with); auth from those credentials or the key in `key_env` (`endpoint_auth`); `transport` replaces
    the network (httpx.MockTransport in tests)."""

    def __init__(
        self,
        name: str,
        url: str,
        key_env: str | None = None,
        timeout_s: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ):
        self.name = name
        self.url, headers = endpoint_auth(name, url, key_env)
        self.http = HttpClient(name, headers=headers, timeout_s=timeout_s, key_env=key_env, transport=transport)
        self.client = self.http.httpx
        # What the requests met, by cause ("retry_429", "split_422", ...): ingestion's record counts them.
        self.events: Counter[str] = Counter()
        self._events_lock = threading.Lock()  # requests may be sent from several threads (ingest concurrency)

    def count(self, event: str) -> None:
        with self._events_lock:
            self.events[event] += 1

    def close(self) -> None:
        self.http.close()

    def request(
        self, method: str, url: str, body: Any = None, cap: BodyCap = DEFAULT_CAP
    ) -> tuple[httpx.Response, float]:
        """Send one request; return the successful response (read up to `cap`) and its wall time in ms."""
        started = time.perf_counter()
        response = self.http.send(method, url, cap, json=body)
        wall_ms = (time.perf_counter() - started) * 1000.0
        if response.status_code >= 400:
            raise self.http.status_error(method, url, response)
        return response, wall_ms

    def request_retrying(
        self, method: str, url: str, body: Any = None, cap: BodyCap = DEFAULT_CAP
    ) -> tuple[httpx.Response, float]:
        """`request`, with busy answers (429, 503) retried after their Retry-After or a bounded backoff; each
        retry counted in `events`. The wall time is the successful attempt's."""
        attempt = 0
        while True:
            started = time.perf_counter()
            response = self.http.send(method, url, cap, json=body)
            wall_ms = (time.perf_counter() - started) * 1000.0
            if response.status_code < 400:
                return response, wall_ms
            wait = retry_wait(response, attempt)
            if wait is None:
                raise self.http.status_error(method, url, response)
            self.count(f"retry_{response.status_code}")
            time.sleep(wait)
            attempt += 1

    def json_of(self, response: httpx.Response) -> Any:
        """The JSON body, or one clear error when the endpoint answered HTML or other text."""
        return self.http.reply(response).body

    def shape_error(self, url: str, expected: str, body: Any) -> ServerError:
        try:
            shown = one_line(json.dumps(body), 160)
        except RecursionError:  # parsed just within Python's nesting limit, shown from deeper in the stack
            shown = "(nested too deeply to show)"
        return Reply(self.name, url, 200, body, shown).wrong_shape(f"expected {expected}")
