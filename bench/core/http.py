"""The one HTTP layer of ragbench: every request to a server (targets, endpoints, doctor, meter) is
sent, checked and read here.

- Keys come from the environment (`key_from_env`, through `bench.core.secrets`, so they are masked wherever
  they would show up later); every message that leaves this module goes through `bench.core.secrets.mask`.
- `auth_headers` is the one place a server's auth headers are built: credentials in its URL
  (`http://user:pass@host`) become `Authorization: Basic`, a key `Authorization: Bearer` (or its own
  header); what is sent is registered as a secret, and a URL and a key that both claim `Authorization`
  are refused (one would silently replace the other).
- A request that gets no HTTP answer raises `ServerUnreachable`; an error status raises
  `HttpStatusError` with the server's own words, found in any of the error-body shapes servers use.
- Every body we read goes through `Reply`: JSON that is not JSON (HTML, truncated, nested too deeply for
  Python's parser), or JSON of another shape, ends in one line naming the server, the request and what
  came back — never a JSONDecodeError, RecursionError or KeyError traceback. `loads` is the one JSON
  decode of a server's bytes, for the paths that read them without httpx too.
- A client's timeout is a deadline for the whole request (`new_client`): connecting, sending and every
  read of the answer end when it has passed, so a server that trickles a byte at a time cannot hold a
  request past it (httpx's own timeouts are per socket operation).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpcore
import httpx

from bench.core.errors import ServerError, UserError
from bench.core.secrets import mask, register_secret, secret_from_env

_REQUIRED = object()


class ServerUnreachable(ServerError):
    """No HTTP answer at all: connection refused or reset, no reply in time. What a dead server looks like."""


class HttpStatusError(ServerError):
    """The server answered with an error status."""

    def __init__(
        self,
        server: str,
        status: int,
        message: str,
        error_type: str | None = None,
        request: str = "",
        hint: str = "",
        created: list[str] | None = None,
    ):
        self.status = status
        self.message = message
        self.error_type = error_type
        self.url = request
        kind = f" {error_type}" if error_type else ""
        said = f"{hint} (the server said: {message})" if hint and message else hint or message
        super().__init__(server, mask(f"HTTP {status}{kind} from {request}: {said}"), created=created)


def key_from_env(owner: str, key_env: str | None, required: bool = True) -> str | None:
    """The API key in environment variable `key_env` (keys never travel in specs or arguments);
    a UserError naming `owner` when it is required and unset."""
    if not key_env:
        return None
    value = secret_from_env(key_env)
    if value is None and required:
        raise UserError(f"{owner}: environment variable {key_env} (key_env) is not set")
    return value


def auth_headers(
    owner: str, url: str, key: str | None = None, key_header: str = "Authorization", key_name: str = "the API key"
) -> tuple[str, dict[str, str]]:
    """(`url` without its credentials, the headers that authenticate to it).

    Credentials in the URL become `Authorization: Basic base64(user:password)` (as a browser or curl
    sends them), `key` becomes `Authorization: Bearer KEY`, or the bare key in `key_header` (LightRAG's
    X-API-Key). Both in `Authorization` is a UserError naming `owner` and `key_name`: which one a server
    expects is the user's to say. Every secret sent is registered for masking, base64 form included."""
    headers: dict[str, str] = {}
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:  # `http://user:pa/ss@host`: the password's `/` ended the host, its start became the "port"
        raise UserError(
            mask(
                f"{owner}: {url} is not a valid URL: no port in it (a password holding / ? # @ or % is "
                "written percent-encoded: %2F %3F %23 %40 %25)"
            )
        ) from None
    if parts.username is not None or parts.password is not None:
        user, password = parts.username or "", parts.password or ""
        for raw in (password, unquote(password)):
            register_secret(raw)
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        register_secret(token)
        headers["Authorization"] = f"Basic {token}"
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    if key:
        register_secret(key)
        if key_header in headers:
            raise UserError(
                f"{owner}: the URL holds credentials (user:password@) and {key_name} is set; both would "
                "be sent as the Authorization header and one would replace the other: give one of them"
            )
        headers[key_header] = f"Bearer {key}" if key_header == "Authorization" else key
    return url, headers


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def error_message(response: httpx.Response) -> tuple[str, str | None]:
    """(message, error_type) from any error body shape, or the plain text itself.

    TEI answers `{error, error_type}` (and plain text from its HTTP layer), OpenAI-compatible servers
    `{error: {message, type}}` or `{message, code, type}`, FastAPI servers `{detail}`."""
    text = response.text
    try:
        body = loads(text)
    except ValueError:
        return one_line(text) or response.reason_phrase, None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):  # OpenAI / LiteLLM
            return one_line(str(error.get("message", error))), _str_or_none(error.get("type"))
        if isinstance(error, str) and error:  # TEI
            return one_line(error), _str_or_none(body.get("error_type"))
        if body.get("message"):  # TEI's OpenAI route, LightRAG
            return one_line(str(body["message"])), _str_or_none(body.get("type"))
        if body.get("detail"):  # FastAPI
            detail = body["detail"]
            return one_line(detail if isinstance(detail, str) else json.dumps(detail)), None
    return one_line(text) or response.reason_phrase, None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


class JsonTooDeep(ValueError):
    """JSON nested deeper than Python's parser can follow: a broken answer like any other."""


def loads(data: bytes | str) -> Any:
    """`json.loads` of a server's bytes, where nesting too deep to parse is a ValueError (JsonTooDeep), not a
    RecursionError: `[` repeated 100,000 times is a bad answer, one line like truncated JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise JsonTooDeep("JSON nested too deeply to read") from None


def parse_json(response: httpx.Response) -> tuple[Any, str]:
    """(body, "") for a JSON body; (None, what came instead) for HTML, text, broken JSON or nothing."""
    try:
        return loads(response.content), ""
    except (ValueError, UnicodeDecodeError) as exc:
        kind = response.headers.get("content-type", "no content-type")
        if not response.content:
            return None, "answered an empty body"
        if isinstance(exc, JsonTooDeep):
            return None, "answered JSON nested too deeply to read"
        if "json" in kind:
            return (
                None,
                f"answered broken JSON ({getattr(exc, 'msg', type(exc).__name__)} at byte {getattr(exc, 'pos', '?')})",
            )
        return None, f"answered {kind}, not JSON"


# The deadline of the request this thread is sending (time.monotonic()), None outside one: every socket
# operation of the clients `new_client` makes waits at most until it.
_deadline: ContextVar[float | None] = ContextVar("request_deadline", default=None)
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
    """A streamed answer's body: each read runs under its request's deadline, however late it is read."""

    def __init__(self, stream: httpx.SyncByteStream, deadline: float):
        self.stream, self.deadline = stream, deadline

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self.stream)
        while True:
            token = _deadline.set(self.deadline)
            try:
                chunk = next(chunks, None)
            finally:
                _deadline.reset(token)
            if chunk is None:
                return
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
            pool = getattr(transport, "_pool", None)  # httpx.HTTPTransport's httpcore pool, proxies' included
            if pool is not None:
                pool._network_backend = _DeadlineBackend(pool._network_backend)

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        budgets = [s for s in request.extensions.get("timeout", {}).values() if s is not None]
        if not budgets:
            return super().send(request, **kwargs)
        deadline = time.monotonic() + max(budgets)
        token = _deadline.set(deadline)
        try:
            response = super().send(request, **kwargs)
        finally:
            _deadline.reset(token)
        if not response.is_stream_consumed and isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _DeadlineBody(response.stream, deadline)
        return response


def new_client(timeout_s: float, headers: dict[str, str] | None = None, base_url: str = "") -> httpx.Client:
    """The one place an httpx client is made. `timeout_s` bounds each request as a whole (`_DeadlineClient`)."""
    return _DeadlineClient(base_url=base_url, headers=headers or {}, timeout=timeout_s)


@dataclass
class Reply:
    """A successful answer whose body was JSON. `get` reads a field and checks its type, so a body of
    another shape is one clear error instead of a KeyError deep in a driver."""

    server: str
    request: str  # "POST /query/data"
    status: int
    body: Any
    text: str
    created: list[str] | None = None

    def get(self, *path: str | int, kind: type | tuple[type, ...] = object, default: Any = _REQUIRED) -> Any:
        """`body[path[0]][path[1]]...`, which must be a `kind`. Missing or null: `default` where one is given."""
        value = self.body
        for i, key in enumerate(path):
            container_ok = isinstance(value, list) if isinstance(key, int) else isinstance(value, dict)
            if not container_ok:
                raise self.wrong_shape(
                    f"{self._name(path[:i]) or 'the body'} is {_kind(value)}, not "
                    f"{'a list' if isinstance(key, int) else 'an object'}"
                )
            present = (-len(value) <= key < len(value)) if isinstance(key, int) else key in value
            value = value[key] if present else None
            if value is None and default is not _REQUIRED:
                return default
            if not present:
                raise self.wrong_shape(f"no {self._name(path[: i + 1])}")
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # JSON true/false is a bool, which Python counts as an int: a number only where a boolean may stand
        if not isinstance(value, kind) or (isinstance(value, bool) and not {bool, object} & set(kinds)):
            raise self.wrong_shape(f"{self._name(path) or 'the body'} is {_kind(value)}, not {_kind_name(kind)}")
        return value

    def wrong_shape(self, what: str) -> ServerError:
        return ServerError(
            self.server,
            mask(f"{self.request} answered JSON of an unexpected shape ({what}): {one_line(self.text, 160)!r}"),
            created=self.created,
        )

    @staticmethod
    def _name(path: tuple[str | int, ...]) -> str:
        return "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else str(k)) for i, k in enumerate(path))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {
            dict: "an object",
            list: "a list",
            str: "a string",
            bool: "a boolean",
            int: "an integer",
            float: "a number",
        }.get(k, k.__name__)
        for k in kinds
    )


class HttpClient:
    """One server: its name, base URL, auth headers and timeout.

    `server` names it in every error ("LightRAG at http://…"); `created` (owned by the caller) is
    what ragbench made on it so far, carried by every error so a user can clean up after a failure;
    `key_env` is named when the server refuses the key.
    """

    def __init__(
        self,
        server: str,
        base_url: str = "",
        headers: dict[str, str] | None = None,
        timeout_s: float = 120.0,
        created: list[str] | None = None,
        key_env: str | None = None,
    ):
        self.server = mask(server)
        self.base_url = base_url.rstrip("/")
        self.created = created if created is not None else []
        self.key_env = key_env
        self.timeout_s = timeout_s
        self.httpx = new_client(timeout_s, headers, self.base_url)

    def error(self, message: str) -> ServerError:
        return ServerError(self.server, mask(message), created=self.created)

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request, any status; no HTTP answer raises `ServerUnreachable`."""
        request = f"{method} {path}"
        try:
            return self.httpx.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ServerUnreachable(
                self.server,
                mask(f"no complete answer to {request} within {self.timeout_s:g} s (the whole request's timeout)"),
                created=self.created,
            ) from None
        except (httpx.ConnectError, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            why = "cannot connect" if isinstance(exc, httpx.ConnectError) else f"connection lost, {type(exc).__name__}"
            raise ServerUnreachable(
                self.server,
                mask(f"cannot reach {request} ({why}: is the server running at this URL?)"),
                created=self.created,
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self.error(f"{request} failed: {type(exc).__name__}: {exc}") from None

    def call(self, method: str, path: str, ok: tuple[int, ...] = (200,), **kwargs: Any) -> httpx.Response:
        """One request whose status must be in `ok` (any 2xx when `ok` is empty)."""
        response = self.send(method, path, **kwargs)
        if response.status_code in ok or (not ok and response.status_code < 300):
            return response
        raise self.status_error(method, path, response)

    def json(self, method: str, path: str, ok: tuple[int, ...] = (200,), **kwargs: Any) -> Reply:
        """One request whose answer must be JSON: the checked `Reply`."""
        return self.reply(self.call(method, path, ok, **kwargs))

    def reply(self, response: httpx.Response) -> Reply:
        request = f"{response.request.method} {self._path(response)}"
        body, problem = parse_json(response)
        if problem:
            raise self.error(f"{request} {problem}: {one_line(response.text, 120)!r}")
        return Reply(self.server, request, response.status_code, body, response.text, self.created)

    def status_error(self, method: str, path: str, response: httpx.Response) -> HttpStatusError:
        code = response.status_code
        message, error_type = error_message(response)
        hint = ""
        if code in (401, 403) and self.key_env:
            hint = f"the key was refused; check {self.key_env}"
        elif code in (401, 403) and self.httpx.headers.get("Authorization", "").startswith("Basic "):
            hint = "the credentials in the URL (user:password@) were refused"
        elif code == 404 and message in ("", "Not Found"):
            hint = "this server has no such endpoint (an older version?)"
        elif code == 405:
            hint = "endpoint not supported by this server version"
        return HttpStatusError(self.server, code, message, error_type, f"{method} {path}", hint, self.created)

    def _path(self, response: httpx.Response) -> str:
        url = str(response.request.url)
        return url[len(self.base_url) :] if self.base_url and url.startswith(self.base_url) else url

    def close(self) -> None:
        self.httpx.close()
