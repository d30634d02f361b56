"""The server's own view of a point: TEI's Prometheus `/metrics`, read before and after, as deltas.

Parsed by `bench.endpoints.tei_metrics.parse_snapshot` (prometheus_client's parser, TEI's `te_*` families). Counters
become `{"name{labels}": increase}`; histograms `{count, sum, mean, buckets: {le: increase}}` (seconds as
TEI exports them); gauges their value after the point. Any server that does not serve TEI's metrics
gets `server_metrics: null`. The per-request split (x-queue-time …) comes from response headers in
the worker, not from here.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from bench.core.http import new_client
from bench.endpoints.tei_metrics import MetricsSnapshot, parse_snapshot
from bench.results.schema import MetricHistogram, ServerMetrics


def delta(before: MetricsSnapshot, after: MetricsSnapshot) -> ServerMetrics:
    """What happened between two snapshots (a counter that went down was reset: its after value counts), as the
    point's `server_metrics` holds it."""

    def grown(a: float, b: float | None) -> float:
        return a - b if b is not None and a >= b else a

    counters = {k: grown(v, before.counters.get(k)) for k, v in after.counters.items()}
    hists: dict[str, MetricHistogram] = {}
    for key, block in after.histograms.items():
        old = before.histograms.get(key)
        count = grown(block.count, old.count if old else None)
        total = grown(block.sum, old.sum if old else None)
        hists[key] = MetricHistogram(
            count=count,
            sum=total,
            mean=total / count if count else None,
            buckets={le: grown(v, old.buckets.get(le) if old else None) for le, v in block.buckets.items()},
        )
    return ServerMetrics(counters=counters, histograms=hists, gauges=dict(after.gauges))


class MetricsReader:
    """GET {origin}/metrics with a short timeout; `None` when the server does not serve TEI's metrics."""

    def __init__(self, route_url: str, headers: dict[str, str], timeout_s: float = 5.0):
        parts = urlsplit(route_url)
        self.url = f"{parts.scheme}://{parts.netloc}/metrics"
        self.client = new_client(timeout_s, headers)
        self.closed = False

    def snapshot(self) -> MetricsSnapshot | None:
        """The server's metrics now; None when it has none, or when the reader was closed (a Ctrl-C may close
        it while a snapshot is on its way in another thread: that snapshot is not wanted any more)."""
        if self.closed:
            return None
        try:
            response = self.client.get(self.url)
            if response.status_code != 200:
                return None
            snapshot = parse_snapshot(response.text)
        except (httpx.HTTPError, ValueError):
            return None
        except RuntimeError:  # httpx: "the client has been closed"
            if self.closed:
                return None
            raise
        return None if snapshot.empty else snapshot

    def close(self) -> None:
        self.closed = True
        self.client.close()
