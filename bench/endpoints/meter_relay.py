"""The meter's HTTP side: forwards /ROUTE/... to the route's upstream unchanged, streams the reply back, and
books each call in the meter's ledger."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from bench.core.http import MIB, capped
from bench.endpoints.meter_calls import CallRecord, SentRequest, texts_in, upstream_seconds
from bench.endpoints.meter_ledger import MeterLedger
from bench.endpoints.meter_usage import decode_body, usage_from_body

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
# What a reply may hold to have its `usage` read (an LLM's usage comes in the last SSE event; an embedding answer
# of a big batch is megabytes): a reply past it is relayed whole, its usage unknown, and memory stays bounded.
USAGE_BODY_CAP = 16 * MIB
# A request body past this is refused (413) before it is read: a batch of texts or a prompt is far smaller.
MAX_REQUEST_BYTES = 256 * MIB

# The usage reply names the meter's run in this header: two readings from different runs are not subtracted.
INSTANCE_HEADER = "X-Ragbench-Meter-Instance"


class MeterPath(StrEnum):
    """The meter's own paths (every other path is `/ROUTE/...`, relayed upstream)."""

    USAGE = "/_meter/usage"  # the ledger's snapshot
    HEALTH = "/_meter/health"


@dataclass(frozen=True)
class Forwarding:
    """What the handler forwards with: the routes' upstream URLs and credential headers, the upstream client,
    and the ledger each call is booked in."""

    ledger: MeterLedger
    upstreams: dict[str, str]
    auth: dict[str, dict[str, str]]  # route -> headers from the credentials in its URL
    client: httpx.Client


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (an app giving up on a call) is counted, not printed as a traceback."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # A client gone (ConnectionError) or silent past the handler's timeout (TimeoutError) ends its connection.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def make_handler(forwarding: Forwarding, client_timeout_s: float) -> type[BaseHTTPRequestHandler]:
    """The handler class of one meter; `client_timeout_s` bounds each wait on a client's socket (a request sent
    in part, a reply not read), so a client that stops mid-request does not hold a thread for ever."""
    return type("Handler", (_Handler,), {"forwarding": forwarding, "timeout": client_timeout_s})


@dataclass
class _Relayed:
    """What came back from the upstream so far: a status once it answered, and the raw body relayed."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    encoding: str = ""
    body: bytearray = field(default_factory=bytearray)  # up to USAGE_BODY_CAP
    overflow: bool = False  # the reply went past USAGE_BODY_CAP: its usage is unknown

    def keep(self, chunk: bytes) -> None:
        if len(self.body) + len(chunk) > USAGE_BODY_CAP:
            self.overflow = True
            self.body.clear()
        elif not self.overflow:
            self.body += chunk

    def usage(self) -> dict[str, object] | None:
        if self.status is None or self.status >= 400 or self.overflow:
            return None
        decoded = decode_body(bytes(self.body), self.encoding, USAGE_BODY_CAP)
        return None if decoded is None else usage_from_body(decoded, self.content_type)


@dataclass
class _Pending:
    """A forwarded call not yet counted: its route, start, request and what came back."""

    route: str
    start: float
    sent: SentRequest
    relayed: _Relayed


class _Handler(BaseHTTPRequestHandler):
    """Forwards /ROUTE/... to the route's upstream; `forwarding` is set per server by `make_handler`."""

    protocol_version = "HTTP/1.1"
    forwarding: Forwarding
    _pending: _Pending | None = None  # the call being forwarded, until `_book` counts it

    def log_message(self, *args: object) -> None:  # the totals are the log
        pass

    def _reply_json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header(INSTANCE_HEADER, self.forwarding.ledger.instance)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _request_length(self) -> int | None:
        """The request body's length, or None where the request was refused for it (a garbage or negative
        Content-Length, a chunked body, a body past MAX_REQUEST_BYTES) and the connection is to close."""
        text = (self.headers.get("Content-Length") or "0").strip()
        refusal = None
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            refusal = 411, "a chunked request body: send it with a Content-Length"
        elif not text.isdigit():
            refusal = 400, f"Content-Length {text[:40]!r} is not a length"
        elif int(text) > MAX_REQUEST_BYTES:
            refusal = 413, f"a request body of {int(text):,} bytes, past the meter's cap of {MAX_REQUEST_BYTES:,}"
        if refusal is None:
            return int(text)
        self.close_connection = True
        self._reply_json(refusal[0], {"error": f"meter: {refusal[1]}"})
        return None

    def _forward(self) -> None:
        fwd = self.forwarding
        own = self.path.split("?")[0]
        if own in set(MeterPath):
            self._reply_json(200, fwd.ledger.snapshot() if own == MeterPath.USAGE else {"status": "ok"})
            return
        route, _, rest = self.path.lstrip("/").partition("/")
        length = self._request_length()
        if length is None:
            return
        body = self.rfile.read(length) if length else b""
        if route not in fwd.upstreams:
            self._reply_json(404, {"error": f"no upstream for /{route}; routes: {sorted(fwd.upstreams)}"})
            return
        auth = fwd.auth[route]
        # Values stripped: whitespace around a field value is not part of it (RFC 9110 §5.5), and Open WebUI 0.12.4
        # sends `Authorization: Bearer ` for a reranker without a key, which the upstream client refuses to send.
        headers = [
            (k, v.strip())
            for k, v in self.headers.items()
            if k.lower() not in _HOP_BY_HOP and k.lower() not in {a.lower() for a in auth}
        ]
        headers += auth.items()
        start = fwd.ledger.begin(route)
        relayed = _Relayed()
        sent = SentRequest(self.command, rest, tuple(headers), body)
        self._pending = _Pending(route, start, sent, relayed)
        try:
            self._relay(f"{fwd.upstreams[route]}/{rest}", headers, body, relayed)
        except httpx.HTTPError as exc:
            self._book()
            if relayed.status is None:
                self._reply_json(502, {"error": f"meter: upstream {route} failed: {type(exc).__name__}"})
            else:  # cut mid-reply: the reply stays unterminated and the connection closes, so the client knows now
                self.close_connection = True
        finally:
            self._book()

    def _book(self) -> None:
        """Count the call in flight in the ledger, once: before the client has the end of its reply, so that a
        snapshot the client takes right after it (one query's cost, its hop split) holds the call."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        ledger, sent, relayed = self.forwarding.ledger, pending.sent, pending.relayed
        call = CallRecord(
            pending.route,
            pending.start,
            time.perf_counter() - pending.start,
            relayed.status,
            texts_in(sent.body),
            False,
            upstream_seconds(relayed.headers),
            request=sent if ledger.log_calls else None,
        )
        ledger.record(pending.route, call, sent.body, relayed.usage())

    def _relay(self, url: str, headers: list[tuple[str, str]], body: bytes, relayed: _Relayed) -> None:
        """The upstream's answer to the client as it comes, chunked, so a streamed reply is not held back."""
        client = self.forwarding.client
        # Uncapped: a pass-through relays what the upstream sends; only what it keeps to read `usage` is capped.
        request = client.build_request(self.command, url, headers=headers, content=body, extensions=capped(None))
        response = client.send(request, stream=True)
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
                relayed.keep(chunk)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self._book()
            self.wfile.write(b"0\r\n\r\n")
        finally:
            response.close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward
