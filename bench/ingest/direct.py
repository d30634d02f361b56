"""The app's embedding calls sent again straight to the embedder: the same requests (method, path, headers, body),
each distinct body once (a call the app repeated, after a refusal or for a second pass over the same chunks, is
part of what the app adds), as many in flight as the app had at its peak. Its wall time is what the embedder alone
needs for the app's work; app docs/s ÷ direct docs/s is what the app leaves of it."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.core.http import new_client
from bench.endpoints.meter_calls import CallRecord, SentRequest
from bench.ingest.calls import peak_in_flight
from bench.results.schema import DirectIngest


def send_direct(route: str, upstream: str, calls: list[CallRecord], documents: int, timeout_s: float) -> DirectIngest:
    """Send each distinct successful call of the route (those with a kept request) to `upstream` again."""
    bodies: dict[bytes, SentRequest] = {}
    for c in calls:
        if c.request is not None and c.status is not None and c.status < 400:
            bodies.setdefault(c.request.body, c.request)
    sent = list(bodies.values())
    concurrency = max(1, peak_in_flight(calls))
    failed = 0
    client = new_client(timeout_s)
    for name in list(client.headers.keys()):  # the app's own headers only
        del client.headers[name]

    def one(index: int) -> bool:
        request = sent[index]
        headers = [(k, v) for k, v in request.headers if k.lower() not in ("host", "content-length")]
        try:
            reply = client.request(request.method, f"{upstream}/{request.path}", headers=headers, content=request.body)
        except httpx.HTTPError:
            return False
        return reply.status_code < 400

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            failed = sum(1 for ok in pool.map(one, range(len(sent))) if not ok)
    finally:
        client.close()
    seconds = time.perf_counter() - started
    return DirectIngest(
        route=route,
        calls=len(sent),
        failed_calls=failed,
        concurrency=concurrency,
        seconds=seconds,
        docs_per_s=documents / seconds if seconds > 0 and sent and not failed else None,
    )
