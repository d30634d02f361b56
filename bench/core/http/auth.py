"""Authentication to a server: keys read from the environment and the headers that carry them.

Keys come from the environment (`key_from_env`, through `bench.core.secrets`, so they are masked wherever they
would show up later). `auth_headers` is the one place a server's auth headers are built: credentials in its URL
(`http://user:pass@host`) become `Authorization: Basic`, a key `Authorization: Bearer` (or its own header); what
is sent is registered as a secret, and a URL and a key that both claim `Authorization` are refused (one would
silently replace the other).
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit

from bench.core.errors import UserError
from bench.core.secrets import mask, register_secret, secret_from_env


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
