"""The whole-request deadline of an httpx client: connecting, sending and every read of the answer end when it
has passed, so a server that trickles a byte at a time cannot hold a request past it (httpx's own timeouts are
per socket operation). The same client caps every answer body it reads (bench/core/http/cap.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from bench.core.http.cap import BODY_CAP, BodyCap, BodyTooLarge, cap_of

# The deadline of the request this thread is sending (time.monotonic()), None outside one: every socket
# operation of the clients `new_client` makes waits at most until it.
_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)
# A whole run's deadline (`overall_deadline`): every request sent inside it ends by then too, whatever its own timeout.
_overall: ContextVar[float | None] = ContextVar("overall_deadline", default=None)
_WRITE_PIECE = 65536  # a large body is written in pieces, each bounded by what is left of the deadline


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """The socket timeout an operation gets: its own `timeout`, cut to what is left of the request's deadline."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream):
        self.stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        for start in range(0, len(buffer), _WRITE_PIECE) if buffer else ():
            self.stream.write(buffer[start : start + _WRITE_PIECE], _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(
            self.stream.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sockets, each operation bounded by the deadline of the request it serves."""

    def __init__(self, backend: httpcore.NetworkBackend):
        self.backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self.backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self.backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)


class _DeadlineBody(httpx.SyncByteStream):
    """A streamed answer's body: each read runs under its request's deadline, however late it is read, and the
    raw bytes stop at the request's cap (None: no cap)."""

    def __init__(self, stream: httpx.SyncByteStream, deadline: float | None, cap: BodyCap | None):
        self.stream, self.deadline, self.cap = stream, deadline, cap

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self.stream)
        size = 0
        while True:
            token = _deadline.set(self.deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _deadline.reset(token)
            if chunk is None:
                return
            size += len(chunk)
            if self.cap is not None and size > self.cap.size:
                raise BodyTooLarge(self.cap)
            yield chunk

    def close(self) -> None:
        self.stream.close()


class _DeadlineClient(httpx.Client):
    """An httpx client whose timeout is the whole request's: connect, send and every read together (redirects
    included) end by `timeout` after `send` began. httpx alone applies it to each socket operation, so an
    answer trickling a byte at a time never timed out."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        for transport in [self._transport, *self._mounts.values()]:
            _bound_sockets(transport)

    def send(self, request: httpx.Request, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        budgets = [s for s in request.extensions.get("timeout", {}).values() if s is not None]
        deadline = time.monotonic() + max(budgets) if budgets else None
        overall = _overall.get()
        if overall is not None:
            deadline = overall if deadline is None else min(deadline, overall)
        token = _deadline.set(deadline)
        try:
            response = super().send(request, stream=True, **kwargs)
        finally:
            _deadline.reset(token)
        cap = cap_of(request)
        if isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _DeadlineBody(response.stream, deadline, cap)
        if not stream:
            _read_capped(response, cap)
        return response


@contextmanager
def overall_deadline(seconds: float | None) -> Iterator[None]:
    """Every request this thread sends inside the block ends within `seconds` of its start (None: no bound): a
    command's total time, where each request's own timeout bounds only that request (a server trickling a byte
    every 0.5 s held `identity` past 120 s for 2 texts, each request within its own timeout)."""
    token = _overall.set(None if seconds is None else time.monotonic() + seconds)
    try:
        yield
    finally:
        _overall.reset(token)


def _read_capped(response: httpx.Response, cap: BodyCap | None) -> None:
    """`response.read()`, with the decoded body held to the cap too (a small gzip body can unpack to gigabytes).
    httpx offers no cap on what it decodes, so the body is read here and set where `read()` would have put it."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if cap is not None and size > cap.size:
                raise BodyTooLarge(cap)
            chunks.append(chunk)
    finally:
        response.close()
    response._content = b"".join(chunks)


def _bound_sockets(transport: httpx.BaseTransport | None) -> None:
    """Every socket operation of an httpx-made transport (the default one, and a proxy's from the environment)
    bounded by its request's deadline.

    One of the two private accesses of the HTTP layer (the other: `_read_capped`): httpx.HTTPTransport takes no
    network backend and builds its httpcore pool itself, and the transports for environment proxies are made
    inside httpx.Client, so their pool's `_network_backend` is replaced here. A transport that is not httpx's own
    (httpx.MockTransport, given through `new_client(transport=)`) has no pool and no sockets: it is left as it
    is."""
    pool = getattr(transport, "_pool", None)
    if isinstance(pool, httpcore.ConnectionPool):
        pool._network_backend = _DeadlineBackend(pool._network_backend)


def new_client(
    timeout_s: float,
    headers: dict[str, str] | None = None,
    base_url: str = "",
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """The one place an httpx client is made. `timeout_s` bounds each request as a whole (`_DeadlineClient`), and
    each answer's body is capped (`BODY_CAP` in a request's extensions, else DEFAULT_CAP); `transport` replaces
    the network (httpx.MockTransport in tests; environment proxies then do not apply)."""
    return _DeadlineClient(base_url=base_url, headers=headers or {}, timeout=timeout_s, transport=transport)


def capped(cap: BodyCap | None) -> dict[str, BodyCap | None]:
    """The request extensions that give a request its own body cap (None: none, for a pass-through)."""
    return {BODY_CAP: cap}
