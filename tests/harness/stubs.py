"""A JSON stub server for the hops whose real servers other fixtures run (Open WebUI, LightRAG settings).

Routes map (method, path) to (status, JSON body); bodies may come from ../shared/recordings/ so the
stub answers exactly what the real server answered. A `RawBody` is sent as it is (HTML, truncated
JSON): a server that answers garbage. A route may also be a function of the request's body called per
request; it returns (status, body), or `DROP`: the connection is closed without an answer, as a server
that dies mid-request does. A `Trickle` body sends its headers at once (or, with `head`, them too a byte at a
time), then one byte of the body every `every_s` seconds: a server that keeps a connection alive without
finishing its answer for as long as it likes.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass(frozen=True)
class RawBody:
    content_type: str
    content: bytes


@dataclass(frozen=True)
class Trickle:
    content: bytes
    every_s: float = 1.0
    head: bool = False


DROP = object()


class _Handler(BaseHTTPRequestHandler):
    server: JsonStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.requests.append((method, self.path, dict(self.headers), raw))
        route = self.server.routes.get((method, self.path.split("?")[0]), (404, {"detail": "Not Found"}))
        if callable(route):
            route = route(raw)
        if route is DROP:
            self.close_connection = True
            return
        status, body = route
        if isinstance(body, Trickle):
            self._trickle(status, body)
            return
        raw_body = body if isinstance(body, RawBody) else RawBody("application/json", json.dumps(body).encode())
        payload = raw_body.content
        self.send_response(status)
        self.send_header("Content-Type", raw_body.content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

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

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_DELETE(self) -> None:
        self._answer("DELETE")


class JsonStub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[tuple[str, str], tuple[int, Any]]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

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
