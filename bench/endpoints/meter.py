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

import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path

from bench.core.http import HttpClient, auth_headers, new_client
from bench.endpoints.meter_ledger import MeterLedger
from bench.endpoints.meter_relay import INSTANCE_HEADER, Forwarding, MeterPath, QuietServer, make_handler
from bench.endpoints.meter_trace import TraceWriter
from bench.endpoints.meter_usage import (
    MAX_TOKENS_PER_CALL,
    QUERY_COST_FIELDS,
    Usage,
    checked_usage,
    cost,
    usage_from_body,
)

# The meter's public names, wherever they are defined (bench/ingest, bench/targets and bench/quality import them here).
__all__ = [
    "MAX_TOKENS_PER_CALL",
    "QUERY_COST_FIELDS",
    "Meter",
    "MeterClient",
    "MeterReading",
    "Usage",
    "checked_usage",
    "cost",
    "usage_from_body",
]


class Meter(MeterLedger):
    """The proxy itself: its ledger (`snapshot`, `calls_since`, `wait_idle`, ...) and its server. `start()` serves
    on a background thread; `serve_forever()` on this one."""

    def __init__(
        self,
        upstreams: dict[str, str],
        host: str = "127.0.0.1",
        port: int = 0,
        timeout_s: float = 600.0,
        log_calls: bool = False,
        client_timeout_s: float = 120.0,
        record: Path | None = None,
    ):
        """`timeout_s`: each upstream request's; `client_timeout_s`: each wait on a client's socket (a client that
        stops mid-request is dropped after it). `log_calls`: keep every call's record and request in `calls` (an
        ingest's meter; a long-running meter keeps its totals only). `record`: write a trace of every call there
        (bench/endpoints/meter_trace.py), its clock starting now."""
        for route in upstreams:
            if not route or "/" in route or route.startswith("_"):
                raise ValueError(f"route name {route!r}: one path segment, not starting with '_'")
        self.upstreams: dict[str, str] = {}
        self.auth: dict[str, dict[str, str]] = {}  # route -> headers from the credentials in its URL
        for route, url in upstreams.items():
            self.upstreams[route], self.auth[route] = auth_headers(f"meter upstream {route}", url.rstrip("/"))
        super().__init__(list(self.upstreams), log_calls)
        self._client = new_client(timeout_s)
        # httpx adds its own Accept/Accept-Encoding/User-Agent defaults; a pass-through must not.
        for name in list(self._client.headers.keys()):
            del self._client.headers[name]
        forwarding = Forwarding(self, self.upstreams, self.auth, self._client)
        self._server = QuietServer((host, port), make_handler(forwarding, client_timeout_s))
        self._thread: threading.Thread | None = None
        if record is not None:
            try:
                self.trace = TraceWriter(record, time.perf_counter())
            except OSError:
                self._server.server_close()
                self._client.close()
                raise

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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
        if self.trace is not None:
            self.trace.close()

    def __enter__(self) -> Meter:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class MeterReading:
    """A running meter's totals, and which run of the meter they are (a restarted meter is another instance)."""

    instance: str
    usage: dict[str, Usage]


class MeterClient:
    """Reads a running meter's totals; one query's cost is `cost(before, after)`."""

    def __init__(self, url: str, timeout_s: float = 10.0):
        self.url, headers = auth_headers(f"meter at {url}", url.rstrip("/"))
        self._http = HttpClient(f"meter at {self.url}", self.url, headers, timeout_s=timeout_s)

    def snapshot(self) -> dict[str, Usage]:
        return self.reading().usage

    def reading(self) -> MeterReading:
        response = self._http.call("GET", MeterPath.USAGE)
        reply = self._http.reply(response)
        names = [f.name for f in fields(Usage)]
        # A counter an older meter does not keep reads 0.
        usage = {
            route: Usage(**{name: reply.get(route, name, kind=(int, float), default=0) for name in names})
            for route in reply.get(kind=dict)
        }
        return MeterReading(response.headers.get(INSTANCE_HEADER, ""), usage)

    def close(self) -> None:
        self._http.close()
