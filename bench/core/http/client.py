"""An HTTP client bound to one server: each request sent, its status checked and its body read.

A request that gets no HTTP answer raises `ServerUnreachable`; an error status raises `HttpStatusError` with the
server's own words (`bench.core.http.body.error_message`). Every message that leaves this module goes through
`bench.core.secrets.mask`.
"""

from __future__ import annotations

from typing import Any

import httpx

from bench.core.errors import ServerError
from bench.core.http.body import Reply, error_message, one_line, parse_json
from bench.core.http.cap import DEFAULT_CAP, BodyCap, BodyTooLarge
from bench.core.http.deadline import capped, new_client
from bench.core.secrets import mask


class ServerUnreachable(ServerError):
    """No HTTP answer at all: connection refused or reset, no reply in time. What a dead server looks like."""


class AnswerTooLarge(ServerError):
    """The server's answer passed its body cap (bench/core/http/cap.py): a broken or hostile answer, not read on."""


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


class HttpClient:
    """One server: its name, base URL, auth headers and timeout.

    `server` names it in every error ("LightRAG at http://…"); `created` (owned by the caller) is
    what ragbench made on it so far, carried by every error so a user can clean up after a failure;
    `key_env` is named when the server refuses the key; `transport` replaces the network (httpx.MockTransport
    in tests).
    """

    def __init__(
        self,
        server: str,
        base_url: str = "",
        headers: dict[str, str] | None = None,
        timeout_s: float = 120.0,
        created: list[str] | None = None,
        key_env: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        self.server = mask(server)
        self.base_url = base_url.rstrip("/")
        self.created = created if created is not None else []
        self.key_env = key_env
        self.timeout_s = timeout_s
        self.httpx = new_client(timeout_s, headers, self.base_url, transport)

    def error(self, message: str) -> ServerError:
        return ServerError(self.server, mask(message), created=self.created)

    def send(self, method: str, path: str, cap: BodyCap = DEFAULT_CAP, **kwargs: Any) -> httpx.Response:
        """One request, any status, its answer read up to `cap`; no HTTP answer raises `ServerUnreachable`, an
        answer over the cap `AnswerTooLarge`."""
        request = f"{method} {path}"
        try:
            return self.httpx.request(method, path, extensions=capped(cap), **kwargs)
        except BodyTooLarge as exc:
            raise AnswerTooLarge(self.server, mask(f"{request} {exc}"), created=self.created) from None
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
