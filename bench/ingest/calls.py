"""A metered route's calls during one combination, summed into its `EndpointCalls`: status classes, texts per
call, retries, busy share of the wall time, peak calls in flight, the upstream's own time."""

from __future__ import annotations

from bench.endpoints.meter_calls import CallRecord
from bench.results.schema import EndpointCalls


def busy_seconds(calls: list[CallRecord]) -> float:
    """Wall time with at least one of `calls` in flight (the union of their intervals)."""
    spans = sorted((c.started_s, c.started_s + c.seconds) for c in calls)
    busy, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop <= end:
            continue
        busy += stop - max(start, end)
        end = stop
    return busy


def peak_in_flight(calls: list[CallRecord]) -> int:
    """The most calls in flight at one moment (an end at the same instant as a start counts first)."""
    events = sorted([(c.started_s, 1) for c in calls] + [(c.started_s + c.seconds, -1) for c in calls])
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def endpoint_calls(calls: list[CallRecord], wall_s: float) -> EndpointCalls:
    """What one route's `calls` show over a combination of `wall_s` seconds."""
    by_status: dict[str, int] = {}
    for c in calls:
        by_status[c.status_class] = by_status.get(c.status_class, 0) + 1
    with_texts = [c.texts for c in calls if c.texts is not None]
    timed = [c.upstream_s for c in calls if c.upstream_s is not None]
    return EndpointCalls(
        calls=len(calls),
        by_status=by_status,
        texts=sum(with_texts),
        texts_per_call_mean=sum(with_texts) / len(with_texts) if with_texts else None,
        texts_per_call_max=max(with_texts) if with_texts else None,
        retries=sum(1 for c in calls if c.retry),
        seconds=sum(c.seconds for c in calls),
        busy_fraction=min(1.0, busy_seconds(calls) / wall_s) if wall_s > 0 and calls else None,
        peak_in_flight=peak_in_flight(calls),
        upstream_seconds=sum(timed) if timed else None,
        calls_with_upstream_time=len(timed),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
    )


def by_route(calls: list[CallRecord], wall_s: float) -> dict[str, EndpointCalls]:
    routes = sorted({c.route for c in calls})
    return {route: endpoint_calls([c for c in calls if c.route == route], wall_s) for route in routes}
