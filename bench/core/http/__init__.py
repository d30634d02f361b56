"""The one HTTP layer of ragbench: every request to a server (targets, endpoints, doctor, meter) is sent,
checked and read here.

- `auth`: keys from the environment and the headers that authenticate to a server.
- `body`: a server's answer read as JSON of the expected shape (`Reply`), its error bodies read for its words.
- `deadline`: a client's timeout is a deadline for the whole request (`new_client`).
- `cap`: the cap on every answer body read (`BodyCap`), per request.
- `client`: `HttpClient`, one server's requests, with `ServerUnreachable` and `HttpStatusError`.
"""

from bench.core.http.auth import auth_headers, key_from_env
from bench.core.http.body import JsonTooDeep, Reply, error_message, loads, one_line, parse_json
from bench.core.http.cap import DEFAULT_CAP, MIB, BodyCap, BodyTooLarge
from bench.core.http.client import AnswerTooLarge, HttpClient, HttpStatusError, ServerUnreachable
from bench.core.http.deadline import capped, new_client

__all__ = [
    "DEFAULT_CAP",
    "MIB",
    "AnswerTooLarge",
    "BodyCap",
    "BodyTooLarge",
    "HttpClient",
    "HttpStatusError",
    "JsonTooDeep",
    "Reply",
    "ServerUnreachable",
    "auth_headers",
    "capped",
    "error_message",
    "key_from_env",
    "loads",
    "new_client",
    "one_line",
    "parse_json",
]
