"""One endpoint as the load path sees it: its wire, target and auth, its preflight, and the drain after a point.

endpoints = open_endpoints(specs, op, timeout_s)   # checked and preflighted before anything is written
...
close_endpoints(endpoints)
"""

from __future__ import annotations

import math
import time
from time import perf_counter
from typing import ClassVar

import httpx

from bench.core import values
from bench.core.errors import UserError
from bench.core.http import capped, new_client
from bench.endpoints.base import Embedder, EmbedWire, Reranker, RerankWire, WireRequest
from bench.endpoints.client import endpoint_auth
from bench.endpoints.spec import EndpointSpec, open_endpoint
from bench.load.server_view import MetricsReader
from bench.results.schema import Drain, Op

# After each point the runner waits until the server is idle again: a tiny probe request (the preflight's) answers
# within DRAIN_FACTOR times its idle latency (+ DRAIN_SLACK_S, for a probe of a millisecond on a busy machine),
# asked again every DRAIN_POLL_S, for at most the point's --timeout (DRAIN_MIN_S at least). Requests the client
# gave up on (timeouts) are still queued in the server: without it the next point, or the next command, measures
# that backlog.
IDLE_PROBES = 3  # at the preflight: the idle latency is the fastest of these
DRAIN_FACTOR = 3.0
DRAIN_SLACK_S = 0.02
DRAIN_POLL_S = 0.1
DRAIN_SHOWN_S = 1.0  # a drain longer than this is said in the console


class InProcessCall:
    """A picklable request for in-process endpoints: opens the endpoint once per worker process."""

    _opened: ClassVar[dict[tuple[str, str, tuple[tuple[str, str], ...]], Embedder | Reranker]] = {}

    def __init__(self, spec: EndpointSpec, op: Op, payloads: list[tuple[str | None, list[str]]]):
        self.spec, self.op, self.payloads = spec, op, payloads

    def endpoint(self) -> Embedder | Reranker:
        key = (self.spec.name, self.spec.kind, tuple(sorted(self.spec.params.items())))
        if key not in self._opened:
            self._opened[key] = open_endpoint(self.spec)
        return self._opened[key]

    def warm(self) -> None:
        """Load the model before the first measured call (reference kinds load lazily)."""
        self(0)

    def __call__(self, index: int) -> None:
        query, texts = self.payloads[index]
        endpoint = self.endpoint()
        if self.op == Op.RERANK and isinstance(endpoint, Reranker):  # check_op: a rerank op has a rerank endpoint
            endpoint.rerank(query or "", texts)
        elif isinstance(endpoint, Embedder):
            endpoint.embed(texts)
        else:
            raise TypeError(f"endpoint {self.spec.name}: cannot {self.op}")


class LoadEndpoint:
    """One endpoint as the load path sees it: its kind's wire (shared with the API client), target, auth."""

    def __init__(self, spec: EndpointSpec):
        self.spec = spec
        client = open_endpoint(spec)  # builds the wire from the spec's options; sends nothing
        self.in_process = spec.url is None
        # An HTTP kind's client holds its wire; an in-process one has none.
        wire = None if self.in_process else getattr(client, "wire", None)
        self.embed_wire: EmbedWire | None = None if spec.is_rerank else wire
        self.rerank_wire: RerankWire | None = wire if spec.is_rerank else None
        client.close()
        self.headers = {} if spec.url is None else endpoint_auth(spec.name, spec.url, spec.params.get("key_env"))[1]
        self.metrics = None if self.in_process else MetricsReader(self.request(("q", ["t"])).url, self.headers)
        self.idle_probe_s: float | None = None  # the probe's latency on the idle server (preflight)
        # Made once (not timed). Each probe passes its own timeout: a whole-request deadline, so a trickle ends.
        self.prober = None if self.in_process else new_client(values.TIMEOUT_SECONDS.high, self.headers)

    @property
    def wire(self) -> EmbedWire | RerankWire | None:
        return self.rerank_wire or self.embed_wire

    def request(self, payload: tuple[str | None, list[str]]) -> WireRequest:
        """One request on the kind's wire: a query and its documents (rerank), or texts (embed)."""
        query, texts = payload
        if self.rerank_wire is not None:
            return self.rerank_wire.request(query or "", texts)
        if self.embed_wire is None:
            raise RuntimeError(f"endpoint {self.spec.name}: in-process endpoints have no wire")
        return self.embed_wire.request(texts)

    def preflight(self, op: Op, timeout_s: float) -> None:
        """One small request through the API client before the sweep: a wrong URL, key or model fails
        here with one clear line, and a cold server's first (slow) answer is not left to a warm-up.
        It waits --timeout like every measured request: a hanging server is named as soon as one would be."""
        client = open_endpoint(self.spec, timeout_s)
        try:
            if isinstance(client, Reranker):  # check_op: the op is the endpoint's kind
                client.rerank("warm-up query", ["warm-up text", "another warm-up text"])
            else:
                dim = client.embed(["warm-up text"]).vectors.shape[1]
                if self.embed_wire is not None:
                    self.embed_wire.dim = dim  # every answer of the sweep must keep it (a changed one: bad_response)
        finally:
            client.close()
        self.idle_probe_s = min(self.probe(timeout_s) or math.inf for _ in range(IDLE_PROBES))

    def probe(self, timeout_s: float) -> float | None:
        """Seconds one tiny request (a text, or a query and two documents) took to answer; inf when it timed out,
        failed, or was refused as overloaded; None when no connection could be made (nothing there to wait for)."""
        if self.prober is None:
            raise RuntimeError(f"endpoint {self.spec.name}: in-process endpoints have no probe")
        wire = self.request(("warm-up query", ["warm-up text", "another warm-up text"][: 2 if self.rerank_wire else 1]))
        started = perf_counter()
        try:
            status = self.prober.request(
                wire.method, wire.url, content=wire.body(), timeout=timeout_s, extensions=capped(wire.cap)
            ).status_code
        except httpx.ConnectError:
            return None
        except httpx.HTTPError:
            return math.inf
        # 429 / 503: no permit free, the queue is full (busy); any other answer came through the queue in its time
        # (a server refusing everything at once is not kept busy by a backlog).
        return math.inf if status in (429, 503) else perf_counter() - started

    def drain(self, timeout_s: float) -> Drain | None:
        """Wait until the server is idle again (DRAIN_FACTOR), for at most `timeout_s`; None for in-process ones
        and when the preflight's probes failed (no idle latency to compare with)."""
        if self.in_process or self.idle_probe_s is None or not math.isfinite(self.idle_probe_s):
            return None
        idle = self.idle_probe_s
        started = perf_counter()
        deadline = started + timeout_s
        while True:
            took = self.probe(max(0.001, min(timeout_s, deadline - perf_counter())))
            settled = took is not None and took <= DRAIN_FACTOR * idle + DRAIN_SLACK_S
            # Given up when no connection can be made (the server is gone) or the time is out.
            if settled or took is None or perf_counter() + DRAIN_POLL_S >= deadline:
                return Drain(
                    seconds=round(perf_counter() - started, 3),
                    idle=settled,
                    probe_ms=round(took * 1000, 3) if took is not None and math.isfinite(took) else math.nan,
                    idle_probe_ms=round(idle * 1000, 3),
                )
            time.sleep(DRAIN_POLL_S)

    def check_op(self, op: Op) -> None:
        if (op == Op.RERANK) != self.spec.is_rerank:
            kind = "a rerank" if self.spec.is_rerank else "an embedding"
            raise UserError(
                f"endpoint {self.spec.name}: {self.spec.kind} is {kind} endpoint; use --op "
                f"{'rerank' if self.spec.is_rerank else 'embed'}"
            )

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
        if self.prober is not None:
            self.prober.close()


def preflight(endpoints: list[LoadEndpoint], op: Op, timeout_s: float) -> None:
    """Every HTTP endpoint's preflight, before the output folder is touched (in-process ones warm in the pool)."""
    for endpoint in endpoints:
        if not endpoint.in_process:
            endpoint.preflight(op, timeout_s)


def open_endpoints(specs: list[EndpointSpec], op: Op, timeout_s: float) -> list[LoadEndpoint]:
    """Every endpoint opened for `op` and asked one small request (in-process ones warm in the pool), before
    the output folder is touched: a wrong kind, URL, key or model is one line, nothing written."""
    endpoints = [LoadEndpoint(spec) for spec in specs]
    try:
        for endpoint in endpoints:
            endpoint.check_op(op)
            if "timeout" in endpoint.spec.params:  # the preflight and every measured request wait the run's timeout
                raise UserError(
                    f"endpoint {endpoint.spec.name}: option timeout= is not used by a load: its --timeout "
                    "bounds every request"
                )
        preflight(endpoints, op, timeout_s)
    except BaseException:
        close_endpoints(endpoints)
        raise
    return endpoints


def close_endpoints(endpoints: list[LoadEndpoint]) -> None:
    for endpoint in endpoints:
        endpoint.close()
