"""The load generator's hot path: a minimal keep-alive HTTP/1.1 client on asyncio Protocols.

Requests are encoded once per point (`encode_request`) and written as bytes; answers are parsed by
httptools (llhttp, the C parser Node.js uses) in `data_received`, with no per-request objects but
the answer itself. Under uvloop it carried 27,000-40,000 requests/s per worker against nginx here when the
worker got the CPU (aiohttp: 4,400-5,000 per core in ../shared/servers.md; figures in docs/load.md). The API
clients keep httpx: they send a few requests, where convenience beats speed.

Timestamps are taken where they belong: `sent` just before the write, `done` when the chunk that
completed the answer arrived (not when a coroutine later got round to it).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import cast
from urllib.parse import urlsplit

import httptools

from bench.core.http import DEFAULT_CAP, BodyCap


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: bool
    path: str  # route path with query, as written on the request line
    host_header: str


def target_of(url: str) -> Target:
    parts = urlsplit(url)
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.hostname or "127.0.0.1", port, tls, path, parts.netloc.rpartition("@")[2])


def encode_request(target: Target, method: str, body: bytes, headers: dict[str, str]) -> bytes:
    head = [
        f"{method} {target.path} HTTP/1.1",
        f"Host: {target.host_header}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class ConnectionLost(Exception):
    """The server closed the connection (or reset it) before the answer was complete."""


class ProtocolViolation(Exception):
    """Bytes that are not HTTP/1.1."""


class AnswerTooLarge(ProtocolViolation):
    """An answer body over its cap (bench/core/http/cap.py): the connection is dropped, not read on."""

    def __init__(self, cap: BodyCap):
        super().__init__(f"answered more than {cap.said()}; not read further")


@dataclass(slots=True)
class Response:
    status: int
    headers: Sequence[tuple[bytes, bytes]]  # only the x-* headers (server timings), names lower-cased
    body: bytes
    done: float  # perf_counter when the last byte arrived


# Called with (when the request was written, its outcome) once the answer is in or failed.
Then = Callable[[float, "Response | Exception"], None]


def _unpooled(conn: Connection) -> None:
    """A connection outside a pool has none to go back to."""


class Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time. Its outcome goes to a Future (`send`) or straight
    to a callback (`send_then`: the closed loop writes its next request from there, no Future, no task, no coroutine
    resumed a request); either way it is delivered once the bytes that completed it are parsed, so what a server
    sends past the answer (no request asked for it) is dropped, never taken for the next request's answer."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        cap: BodyCap = DEFAULT_CAP,
        release: Callable[[Connection], None] = _unpooled,
    ):
        self.loop = loop
        self.cap = cap  # the most of an answer's body that is read
        self.release = release  # hands the connection back to its pool before a callback runs
        self._size = 0  # body bytes of the answer arriving
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[Response] | None = None
        self.then: Then | None = None
        self._outcome: Response | Exception | None = None  # completed inside feed_data, delivered after it
        self.closed = False
        self.sent_at = 0.0
        self.deadline = 0.0  # perf_counter by which the answer must be complete (the watchdog's)
        self._arrived = 0.0
        self._headers: Sequence[tuple[bytes, bytes]] = ()
        self._body: list[bytes] = []

    # asyncio.Protocol -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's, as create_connection makes

    def data_received(self, data: bytes) -> None:
        self._arrived = perf_counter()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.close()
            if self._outcome is None:
                self._outcome = ProtocolViolation(f"not HTTP/1.1: {exc}")
        outcome = self._outcome
        if outcome is not None:
            self._outcome = None
            self._deliver(outcome)

    def eof_received(self) -> bool:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._deliver(ConnectionLost(f"connection lost: {exc}" if exc else "connection closed by the server"))

    # httptools callbacks ----------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        # Called for every header of every answer: the first byte compared as an int (no slice made) first. Reading
        # the raw head instead was tried twice and cost as much: a regex over it (46.35k instructions a request
        # against 46.46k), then three bytes.find over it (43.1k against 42.0k, callgrind, docs/peers.md).
        if name and name[0] | 32 == 120 and name[1:2] == b"-":  # x- or X-
            self._headers = [*self._headers, (name.lower(), value)]  # a list only for answers that have them

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self.cap.size:
            self._body = []
            self.close()
            if self._outcome is None:
                self._outcome = AnswerTooLarge(self.cap)
            return
        self._body.append(body)

    def on_message_complete(self) -> None:
        response = Response(self.parser.get_status_code(), self._headers, b"".join(self._body), self._arrived)
        self._headers, self._body, self._size = (), [], 0
        if not self.parser.should_keep_alive():
            self.close()
        if self._outcome is None:  # a second answer in the same bytes: no request asked for it
            self._outcome = response

    # use ----------------------------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> asyncio.Future[Response]:
        """Write one request; the future gets its Response (or ConnectionLost / ProtocolViolation / TimeoutError,
        the last when it is not complete by `deadline`)."""
        if self.transport is None:
            raise ConnectionLost("not connected")
        self.waiter = waiter = self.loop.create_future()
        self.deadline = deadline
        self.sent_at = perf_counter()
        self.transport.write(data)
        return waiter

    def send_then(self, data: bytes, deadline: float, then: Then) -> None:
        """Write one request; `then(sent, outcome)` is called from the protocol's callbacks with its Response or
        ConnectionLost / ProtocolViolation / TimeoutError, after `release(self)`. The transport must be open."""
        self.then = then
        self.deadline = deadline
        self.sent_at = perf_counter()
        self.transport.write(data)  # type: ignore[union-attr]  # the pool hands out connected ones only

    @property
    def pending(self) -> bool:
        """A request is waiting for its answer."""
        return self.waiter is not None or self.then is not None

    def expire(self) -> None:
        """The answer took longer than the timeout: fail it and drop the connection (it may still answer)."""
        self.close()
        self._deliver(TimeoutError("no answer within the timeout"))

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _deliver(self, outcome: Response | Exception) -> None:
        then, self.then = self.then, None
        if then is not None:
            self.release(self)
            then(self.sent_at, outcome)
            return
        waiter, self.waiter = self.waiter, None
        if waiter is None or waiter.done():
            return
        if isinstance(outcome, Response):
            waiter.set_result(outcome)
        else:
            waiter.set_exception(outcome)


class Pool:
    """Idle keep-alive connections to one target; opens more on demand; a watchdog enforces the timeout, a
    deadline for the whole request: connecting (when no idle connection is free), sending and the whole answer,
    however slowly it trickles in."""

    def __init__(self, target: Target, timeout_s: float, cap: BodyCap = DEFAULT_CAP):
        self.target = target
        self.timeout_s = timeout_s
        self.cap = cap
        self.loop = asyncio.get_running_loop()
        self.idle: list[Connection] = []
        self.busy: set[Connection] = set()
        self.ssl = ssl.create_default_context() if target.tls else None
        self._watchdog = self.loop.create_task(self._watch())

    async def connect(self) -> Connection:
        try:
            _, conn = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: Connection(self.loop, self.cap, self.release),
                    self.target.host,
                    self.target.port,
                    ssl=self.ssl,
                ),
                self.timeout_s,
            )
        except OSError as exc:
            raise ConnectionLost(f"cannot connect to {self.target.host}:{self.target.port}: {exc}") from None
        return conn

    async def request(self, data: bytes) -> tuple[float, Response]:
        """Send on an idle connection (or a new one); (sent time, response)."""
        deadline = perf_counter() + self.timeout_s
        conn = self.take_idle() or await self.connect()
        self.busy.add(conn)
        try:
            future = conn.send(data, deadline)
            sent = conn.sent_at
            response = await future
        finally:
            self.busy.discard(conn)
        if not conn.closed:
            self.idle.append(conn)
        return sent, response

    def start(self, data: bytes, then: Then) -> bool:
        """Send on an idle connection now, `then(sent, outcome)` called from its callbacks once the answer
        is in (the connection back in the pool by then); False when none is idle: the caller takes `request`,
        which connects. The same connections, deadline and watchdog as `request`."""
        idle = self.idle
        while idle:  # take_idle, inlined: this runs once a request
            conn = idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                self.busy.add(conn)
                conn.send_then(data, perf_counter() + self.timeout_s, then)
                return True
        return False

    def take_idle(self) -> Connection | None:
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed and conn.transport is not None and not conn.transport.is_closing():
                return conn
            # the server closed it while idle (keep-alive timeout, restart)
        return None

    def release(self, conn: Connection) -> None:
        """A connection whose answer is in (or failed): idle again unless it was closed."""
        self.busy.discard(conn)
        if not conn.closed:
            self.idle.append(conn)

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(min(0.1, self.timeout_s / 4))
            now = perf_counter()
            for conn in [c for c in self.busy if c.pending and c.deadline < now]:
                conn.expire()

    def close(self) -> None:
        self._watchdog.cancel()
        for conn in [*self.idle, *self.busy]:
            conn.close()
        self.idle.clear()
