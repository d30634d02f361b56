"""A pass-through metering proxy for OpenAI-compatible providers (LLM, embeddings).

LightRAG never reports what a query cost in model calls. Put the meter between LightRAG and its
providers and it counts, per route, the calls, tokens (from the provider's own `usage`) and time:

    ragbench meter --port 9600 --upstream llm=http://llm-host/v1 --upstream embedding=http://emb-host
    # LightRAG: LLM_BINDING_HOST=http://127.0.0.1:9600/llm  EMBEDDING_BINDING_HOST=http://127.0.0.1:9600/embedding

`/<route>/<rest>` is forwarded to `<upstream>/<rest>` with method, query, headers and body unchanged;
the reply comes back unchanged (streamed replies are streamed through), except that an upstream URL
with credentials (`http://user:pass@host`) authenticates with them: its `Authorization: Basic` replaces
the one the client sent (a client's dummy key must not override what the meter was configured with).
`GET /_meter/usage` answers
the running totals; a caller that sends one query at a time gets a query's cost as the difference of
two snapshots (`MeterClient`).
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
import time
import zlib
from dataclasses import asdict, dataclass, field, fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from bench.core.http import HttpClient, auth_headers, loads, new_client
from bench.endpoints.meter_calls import (
    CallRecord,
    SentRequest,
    StatusClass,
    body_digest,
    texts_in,
    upstream_seconds,
)

# Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are never forwarded.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


@dataclass
class Usage:
    calls: int = 0
    errors: int = 0  # calls answered with a status >= 400 or not answered at all
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    seconds: float = 0.0
    calls_without_usage: int = 0  # replies that carried no `usage`: their tokens are unknown, not zero
    # What an ingest needs told apart (bench/endpoints/meter_calls.py): texts carried, refusals by kind, retries,
    # and the upstream's own time where its timing headers tell it.
    texts: int = 0
    status_429: int = 0
    status_413: int = 0
    status_422: int = 0
    status_5xx: int = 0
    retries: int = 0
    upstream_seconds: float = 0.0
    # Wall time with at least one of the route's calls in flight: the time a caller waited on the route, where
    # `seconds` counts calls that overlap once each (bench/targets/hops.py splits a query's time by it).
    busy_seconds: float = 0.0

    def minus(self, other: Usage) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})


# The counters a query's cost holds (`cost()`): what a query spent, not how its calls were refused.
QUERY_COST_FIELDS = (
    "calls",
    "errors",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "seconds",
    "busy_seconds",
    "calls_without_usage",
)
_STATUS_COUNTERS = {
    StatusClass.TOO_MANY_REQUESTS: "status_429",
    StatusClass.TOO_LARGE: "status_413",
    StatusClass.UNPROCESSABLE: "status_422",
    StatusClass.SERVER_ERROR: "status_5xx",
}
# Failed bodies remembered per route to tell a retry; beyond this many the oldest are forgotten.
_FAILED_BODIES_KEPT = 10_000

# Far beyond any context window: a count above it is a broken `usage`, not a figure.
MAX_TOKENS_PER_CALL = 10**8
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def checked_usage(usage: Any) -> dict[str, int] | None:
    """The token counts an OpenAI `usage` object holds, or None where it holds none or any of them is not
    a whole number from 0 to MAX_TOKENS_PER_CALL (negative, huge, text, a boolean): that reply's tokens
    are unknown ("without usage"), never a figure."""
    if not isinstance(usage, dict):
        return None
    counts: dict[str, int] = {}
    for name in USAGE_COUNTS:
        value = usage.get(name)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_TOKENS_PER_CALL:
            return None
        counts[name] = value
    return counts or None


def usage_from_body(body: bytes, content_type: str) -> dict[str, Any] | None:
    """OpenAI `usage` from a JSON reply, or the last one an SSE stream carried."""
    if "text/event-stream" in content_type:
        found = None
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                try:
                    event = loads(line[5:])
                except ValueError:  # broken or too deeply nested: no usage in it
                    continue
                if isinstance(event, dict) and isinstance(event.get("usage"), dict):
                    found = event["usage"]
        return found
    try:
        data = loads(body)
    except ValueError:  # broken, not UTF-8 or too deeply nested: no usage in it
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) else None


def _decode(raw: bytes, encoding: str) -> bytes:
    """Undo a content-encoding for reading `usage`; what is forwarded stays the raw bytes."""
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    return raw


class Meter:
    """The proxy itself. `start()` serves on a background thread; `serve_forever()` on this one."""

    def __init__(
        self,
        upstreams: dict[str, str],
        host: str = "127.0.0.1",
        port: int = 0,
        timeout_s: float = 600.0,
        log_calls: bool = False,
    ):
        """`log_calls`: keep every call's record and request in `calls` (an ingest's meter; a long-running
        meter keeps its totals only)."""
        for route in upstreams:
            if not route or "/" in route or route.startswith("_"):
                raise ValueError(f"route name {route!r}: one path segment, not starting with '_'")
        self.upstreams: dict[str, str] = {}
        self.auth: dict[str, dict[str, str]] = {}  # route -> headers from the credentials in its URL
        for route, url in upstreams.items():
            self.upstreams[route], self.auth[route] = auth_headers(f"meter upstream {route}", url.rstrip("/"))
        self.usage = {route: Usage() for route in self.upstreams}
        self.log_calls = log_calls
        self.in_flight = 0  # calls being forwarded now
        self.calls_total = 0  # calls forwarded so far
        self._last_end = time.perf_counter()
        self.calls: list[CallRecord] = []  # with log_calls: every forwarded call, in the order they ended
        self._failed_bodies: dict[str, dict[str, None]] = {route: {} for route in self.upstreams}
        self._route_in_flight = dict.fromkeys(self.upstreams, 0)
        self._busy_since = dict.fromkeys(self.upstreams, 0.0)  # when the route's current busy stretch began
        self._lock = threading.Lock()
        self._client = new_client(timeout_s)
        # httpx adds its own Accept/Accept-Encoding/User-Agent defaults; a pass-through must not.
        for name in list(self._client.headers.keys()):
            del self._client.headers[name]
        self._server = _QuietServer((host, port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def snapshot(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {route: asdict(u) for route, u in self.usage.items()}

    def wait_idle(self, quiet_s: float = 0.5, timeout_s: float = 30.0) -> bool:
        """Wait until no call has been in flight for `quiet_s` (calls an app left running after it gave up on a
        document still belong to what it did), at most `timeout_s`; whether it got there."""
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            with self._lock:
                idle = self.in_flight == 0 and time.perf_counter() - self._last_end >= quiet_s
            if idle:
                return True
            time.sleep(0.05)
        return False

    def calls_since(self, index: int) -> list[CallRecord]:
        """The calls that ended after the first `index` ones (`len(meter.calls)` taken before)."""
        with self._lock:
            return self.calls[index:]

    def begin(self, route: str) -> float:
        """A call of `route` starts now (its start time): `record` ends it."""
        with self._lock:
            now = time.perf_counter()
            self.in_flight += 1
            if self._route_in_flight[route] == 0:
                self._busy_since[route] = now
            self._route_in_flight[route] += 1
            return now

    def record(self, route: str, call: CallRecord, body: bytes, usage: Any) -> None:
        """A call `begin` started has ended: count it."""
        with self._lock:
            total = self.usage[route]
            failed = self._failed_bodies[route]
            digest = body_digest(body) if body else ""
            retry = bool(digest) and digest in failed
            found = checked_usage(usage)
            call = replace(
                call,
                retry=retry,
                prompt_tokens=(found or {}).get("prompt_tokens", 0),
                completion_tokens=(found or {}).get("completion_tokens", 0),
            )
            if self.log_calls:
                self.calls.append(call)
            self.in_flight -= 1
            self.calls_total += 1
            self._last_end = time.perf_counter()
            self._route_in_flight[route] -= 1
            if self._route_in_flight[route] == 0:
                total.busy_seconds += self._last_end - self._busy_since[route]
            total.calls += 1
            total.seconds += call.seconds
            total.texts += call.texts or 0
            total.retries += retry
            total.upstream_seconds += call.upstream_s or 0.0
            counter = _STATUS_COUNTERS.get(call.status_class)
            if counter:
                setattr(total, counter, getattr(total, counter) + 1)
            if call.status is None or call.status >= 400:
                total.errors += 1
                if digest:
                    failed[digest] = None
                    if len(failed) > _FAILED_BODIES_KEPT:
                        del failed[next(iter(failed))]
            if found is None:
                total.calls_without_usage += 1
                return
            prompt = found.get("prompt_tokens", 0)
            completion = found.get("completion_tokens", 0)
            total.prompt_tokens += prompt
            total.completion_tokens += completion
            total.total_tokens += found.get("total_tokens", prompt + completion)

    def start(self) -> Meter:
        self._thread = threading.Thread(target=self._server.serve_forever, name="ragbench-meter", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def __enter__(self) -> Meter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (an app giving up on a call) is counted, not printed as a traceback."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def _make_handler(meter: Meter) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"meter": meter})


@dataclass
class _Relayed:
    """What came back from the upstream so far: a status once it answered, and the raw body relayed."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    encoding: str = ""
    body: bytearray = field(default_factory=bytearray)

    def usage(self) -> dict[str, Any] | None:
        if self.status is None or self.status >= 400:
            return None
        try:
            return usage_from_body(_decode(bytes(self.body), self.encoding), self.content_type)
        except (OSError, zlib.error):
            return None


class _Handler(BaseHTTPRequestHandler):
    """Forwards /ROUTE/... to the route's upstream; `meter` is set per server by `_make_handler`."""

    protocol_version = "HTTP/1.1"
    meter: Meter

    def log_message(self, *args: object) -> None:  # the totals are the log
        pass

    def _reply_json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self) -> None:
        meter = self.meter
        if self.path.split("?")[0] in ("/_meter/usage", "/_meter/health"):
            self._reply_json(200, meter.snapshot() if "usage" in self.path else {"status": "ok"})
            return
        route, _, rest = self.path.lstrip("/").partition("/")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if route not in meter.upstreams:
            self._reply_json(404, {"error": f"no upstream for /{route}; routes: {sorted(meter.upstreams)}"})
            return
        auth = meter.auth[route]
        # Values stripped: whitespace around a field value is not part of it (RFC 9110 §5.5), and Open WebUI 0.12.4
        # sends `Authorization: Bearer ` for a reranker without a key, which the upstream client refuses to send.
        headers = [
            (k, v.strip())
            for k, v in self.headers.items()
            if k.lower() not in _HOP_BY_HOP and k.lower() not in {a.lower() for a in auth}
        ]
        headers += auth.items()
        start = meter.begin(route)
        relayed = _Relayed()
        try:
            self._relay(f"{meter.upstreams[route]}/{rest}", headers, body, relayed)
        except httpx.HTTPError as exc:
            if relayed.status is None:
                self._reply_json(502, {"error": f"meter: upstream {route} failed: {type(exc).__name__}"})
        finally:
            seconds = time.perf_counter() - start
            sent = SentRequest(self.command, rest, tuple(headers), body) if meter.log_calls else None
            call = CallRecord(
                route,
                start,
                seconds,
                relayed.status,
                texts_in(body),
                False,
                upstream_seconds(relayed.headers),
                request=sent,
            )
            meter.record(route, call, body, relayed.usage())

    def _relay(self, url: str, headers: list[tuple[str, str]], body: bytes, relayed: _Relayed) -> None:
        """The upstream's answer to the client as it comes, chunked, so a streamed reply is not held back."""
        request = self.meter._client.build_request(self.command, url, headers=headers, content=body)
        response = self.meter._client.send(request, stream=True)
        try:
            relayed.status = response.status_code
            relayed.headers = dict(response.headers.items())
            relayed.content_type = response.headers.get("content-type", "")
            relayed.encoding = response.headers.get("content-encoding", "").lower()
            self.send_response(response.status_code)
            for key, value in response.headers.multi_items():
                if key.lower() not in _HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in response.iter_raw():
                relayed.body += chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


class MeterClient:
    """Reads a running meter's totals; one query's cost is `cost(before, after)`."""

    def __init__(self, url: str, timeout_s: float = 10.0):
        self.url, headers = auth_headers(f"meter at {url}", url.rstrip("/"))
        self._http = HttpClient(f"meter at {self.url}", self.url, headers, timeout_s=timeout_s)

    def snapshot(self) -> dict[str, Usage]:
        reply = self._http.json("GET", "/_meter/usage")
        names = [f.name for f in fields(Usage)]
        # A counter an older meter does not keep reads 0.
        return {
            route: Usage(**{name: reply.get(route, name, kind=(int, float), default=0) for name in names})
            for route in reply.get(kind=dict)
        }

    def close(self) -> None:
        self._http.close()


def cost(before: dict[str, Usage], after: dict[str, Usage]) -> dict[str, float]:
    """Flat `<route>_<counter>` numbers for a QueryResult's cost, e.g. `llm_calls`, `llm_prompt_tokens`."""
    flat: dict[str, float] = {}
    for route, now in after.items():
        delta = now.minus(before.get(route, Usage()))
        for name in QUERY_COST_FIELDS:
            value = getattr(delta, name)
            flat[f"{route}_{name}"] = round(value, 6) if isinstance(value, float) else value
    return flat
