"""A JSON stub server for the hops whose real servers other fixtures run (Open WebUI, LightRAG settings).

Routes map (method, path) to (status, JSON body); bodies may come from ../shared/recordings/ so the
stub answers exactly what the real server answered. A `RawBody` is sent as it is (HTML, truncated
JSON): a server that answers garbage. A route may also be a function of the request's body called per
request; it returns (status, body), or `DROP`: the connection is closed without an answer, as a server
that dies mid-request does. A `Trickle` body sends its headers at once (or, with `head`, them too a byte at a
time), then one byte of the body every `every_s` seconds: a server that keeps a connection alive without
finishing its answer for as long as it likes. A `Cut` body promises more bytes than it sends, then the socket is
shut: a reply that dies midway.

It is the one JSON-reply handler of the tests: every loopback server a test needs is a `JsonStub`. A server whose
answer depends on more than the body (headers, a path not known in advance, a query string) takes a `Whole` route,
called with the whole request (`Seen`); `default` answers every request no route names (404 unless given), so a
stub can be one function of the request (a forwarding proxy, a fake of a whole API).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass(frozen=True)
class RawBody:
    content_type: str
    content: bytes
    headers: tuple[tuple[str, str], ...] = ()  # more response headers, as (name, value)


@dataclass(frozen=True)
class Trickle:
    content: bytes
    every_s: float = 1.0
    head: bool = False


@dataclass(frozen=True)
class Cut:
    """Headers that promise `promised` bytes, `content` (fewer), then the socket shut both ways."""

    content: bytes
    promised: int


@dataclass(frozen=True)
class Seen:
    """A request as the stub received it: what a `Whole` route is called with."""

    method: str
    path: str  # as sent, query string included
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class Whole:
    """A route that answers from the whole request: `answer(seen)` returns (status, body) or `DROP`."""

    answer: Callable[[Seen], Any]


DROP = object()


class _Handler(BaseHTTPRequestHandler):
    server: JsonStub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: Nagle held each answer's body ~40 ms

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.requests.append((self.command, self.path, dict(self.headers), raw))
        route = self.server.routes.get((self.command, self.path.split("?")[0]), self.server.default)
        if isinstance(route, Whole):
            route = route.answer(Seen(self.command, self.path, self.headers, raw))
        elif callable(route):
            route = route(raw)
        if route is DROP:
            self.close_connection = True
            return
        status, body = route
        if isinstance(body, Trickle):
            self._trickle(status, body)
        elif isinstance(body, Cut):
            self._cut(status, body)
        else:
            self._send(
                status, body if isinstance(body, RawBody) else RawBody("application/json", json.dumps(body).encode())
            )

    def _send(self, status: int, body: RawBody) -> None:
        self.send_response(status)
        self.send_header("Content-Type", body.content_type)
        for name, value in body.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body.content)))
        self.end_headers()
        self.wfile.write(body.content)

    def _cut(self, status: int, body: Cut) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(body.promised))
        self.end_headers()
        self.wfile.write(body.content)
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _trickle(self, status: int, body: Trickle) -> None:
        head = (
            f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\nContent-Length: {len(body.content)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        self.close_connection = True
        if not body.head:
            self.wfile.write(head)
            self.wfile.flush()
        trickled = head + body.content if body.head else body.content
        try:
            for i in range(len(trickled)):
                self.wfile.write(trickled[i : i + 1])
                self.wfile.flush()
                time.sleep(body.every_s)
        except OSError:  # the client gave up: what the trickle is for
            pass

    do_GET = do_POST = do_PUT = do_DELETE = _answer


class JsonStub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, routes: dict[tuple[str, str], Any], default: Any = (404, {"detail": "Not Found"}), start: bool = True
    ):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes, self.default = routes, default
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []  # method, path, headers, body
        if start:
            self.start()

    def start(self) -> None:
        # A short poll: `stop` (shutdown) waits up to one poll interval, in every test's teardown.
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class JsonRoutes:
    """`JsonStub`'s routes without a server, for `httpx.MockTransport(JsonRoutes(routes))` (a `transport=` of the HTTP
    layer, endpoints and targets): the unit tests whose subject is not the wire itself. A route answers
    (status, JSON body) or, as a function of the request's body, returns one; unknown routes are 404. Every
    request is kept in `requests` as (method, path, body)."""

    def __init__(self, routes: dict[tuple[str, str], Any]):
        self.routes = routes
        self.requests: list[tuple[str, str, bytes]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        raw = request.read()
        self.requests.append((request.method, request.url.path, raw))
        route = self.routes.get((request.method, request.url.path), (404, {"detail": "Not Found"}))
        status, body = route(raw) if callable(route) else route
        if isinstance(body, RawBody):
            return httpx.Response(status, content=body.content, headers={"content-type": body.content_type})
        return httpx.Response(status, json=body)

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)
