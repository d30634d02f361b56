"""One point's record from its workers' shares: counts summed, histograms merged exactly, the point judged.

record = merge_shares(endpoint_name, point, shares, workload, metrics_before, metrics_after)
"""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

from bench.core.secrets import mask
from bench.endpoints.tei_metrics import MetricsSnapshot
from bench.load import histograms
from bench.load.points import PointConfig, Window, judge
from bench.load.quantities import LatencyQuantity, ServerQuantity, server_times
from bench.load.server_view import delta
from bench.load.share import ShareResult
from bench.load.workload import Workload, documents_distribution
from bench.results.schema import ClientView, Latencies, LoadPointRecord, LoadRequests, Loop, Op, Throughput

# A worker is saturated when the requests it drove took this share of what its CPU per request allows
# on a whole core (its own ceiling, measured in the point): the client, not the server, set the pace.
# The machine's load does not count: a descheduled client shows in `loop_lag_p99_ms`, not here.
CLIENT_SATURATED = 0.9


def merge_shares(
    endpoint: str,
    point: PointConfig,
    shares: list[ShareResult],
    workload: Workload,
    metrics_before: MetricsSnapshot | None = None,
    metrics_after: MetricsSnapshot | None = None,
) -> LoadPointRecord:
    """One point's record from its workers' shares: counts summed, histograms merged exactly."""
    merged = (
        {q: histograms.merge([s.histograms.get(q) for s in shares]) for q in shares[0].histograms} if shares else {}
    )
    requests = _requests(shares)
    elapsed = measured_window(point, shares)
    status, problem = judge(requests, point.max_error_rate, _window(point, shares, requests, elapsed))
    return LoadPointRecord(
        endpoint=endpoint,
        op=point.op,
        loop=point.loop,
        batch=point.batch,
        concurrency=point.concurrency,
        rate=point.rate,
        arrival=str(point.arrival) if point.arrival else None,
        duration_s=round(elapsed, 6),
        requests=requests,
        throughput=_throughput(shares, workload, elapsed),
        latency_ms=_latencies(point, merged),
        server_ms=server_times({q: histograms.summary_ms(merged[q]) if merged else None for q in ServerQuantity}),
        server_metrics=delta(metrics_before, metrics_after) if metrics_before and metrics_after else None,
        client=client_view(shares),
        max_inflight=point.max_inflight,
        burst=point.burst,
        length=point.length if isinstance(point.length, int) else None,
        documents=point.batch if point.op == Op.RERANK else None,
        length_distribution=(sent := workload.with_length(point.length)).distribution,  # cut once, kept
        documents_distribution=documents_distribution(point.documents_draw, sent.ring(point.batch)),
        warmup_s=point.warmup_s,
        histograms={q: histograms.encode(h) for q, h in merged.items() if h.get_total_count()},
        error_examples=_error_examples(shares),
        status=status,
        problem=problem,
        max_error_rate=point.max_error_rate,
    )


def _error_examples(shares: list[ShareResult]) -> dict[str, str]:
    """The first example of each error class among the shares, secrets masked."""
    examples: dict[str, str] = {}
    for s in shares:
        for cls, message in s.error_examples.items():
            examples.setdefault(cls, mask(message))
    return examples


def _window(point: PointConfig, shares: list[ShareResult], requests: LoadRequests, elapsed: float) -> Window:
    """The window the point was judged on: intended (what the schedule set in it, else the duration), measured."""
    warmups = [s.warmup_longest_s for s in shares if s.warmup_longest_s is not None]
    return Window(
        intended_s=requests.scheduled_s if requests.scheduled_s is not None else point.duration_s,
        measured_s=elapsed,
        warmup_longest_s=max(warmups) if warmups else None,
    )


def _requests(shares: list[ShareResult]) -> LoadRequests:
    errors: dict[str, int] = {}
    for s in shares:
        for cls, n in s.errors.items():
            errors[cls] = errors.get(cls, 0) + n
    scheduled = [s for s in shares if s.scheduled is not None]
    return LoadRequests(
        sent=sum(s.sent for s in shares),
        ok=sum(s.ok for s in shares),
        errors=errors,
        unsent=sum(s.unsent for s in shares),
        validated=sum(s.validated for s in shares),
        scheduled=sum(s.scheduled or 0 for s in scheduled) if scheduled else None,
        scheduled_s=round(max(s.scheduled_s or 0.0 for s in scheduled), 6) if scheduled else None,
    )


def _throughput(shares: list[ShareResult], workload: Workload, elapsed: float) -> Throughput:
    """Rates over the measured window (`elapsed` s); tokens counted by the server (x-compute-tokens) where it said,
    else by the workload's counter."""
    counted = sum(s.tokens_counted for s in shares)
    estimated = sum(s.tokens_estimated for s in shares)
    ok = sum(s.ok for s in shares)

    def per_s(n: float) -> float:
        return n / elapsed if elapsed > 0 else 0.0

    if not ok:
        tokens_source = None
    elif estimated == 0 and counted:
        tokens_source = "x-compute-tokens"
    elif counted:
        tokens_source = f"x-compute-tokens+{workload.tokens_source}"
    else:
        tokens_source = workload.tokens_source
    return Throughput(
        requests_per_s=per_s(ok),
        texts_per_s=per_s(sum(s.texts_ok for s in shares)),
        tokens_per_s=per_s(counted + estimated),
        tokens_source=tokens_source,
    )


def _latencies(point: PointConfig, merged: dict[str, HdrHistogram]) -> Latencies:
    """Service time always; the times from the intended send only where sends are scheduled (not the closed loop)."""
    scheduled = point.loop != Loop.CLOSED and bool(merged)
    return Latencies(
        service=histograms.summary_ms(merged[LatencyQuantity.SERVICE]) if merged else None,
        scheduled=histograms.summary_ms(merged[LatencyQuantity.SCHEDULED]) if scheduled else None,
        dispatch_delay=histograms.summary_ms(merged[LatencyQuantity.DISPATCH_DELAY]) if scheduled else None,
    )


def measured_window(point: PointConfig, shares: list[ShareResult]) -> float:
    """Seconds from the end of the warm-up to the intended end of the point or the end of its last measured
    request (an answer, an error or a timeout), whichever is later: a server that stops answering stretches
    the window it failed in instead of shrinking it to its last good answer. `--requests` and bursts have no
    intended end: their window ends with their last request. An open loop whose driver ended its window early
    (the pool's stop time) intended only what its schedule set before then (`scheduled_s`): its throughput is
    over that window, not the planned one."""
    start = shares[0].first_measured if shares and shares[0].first_measured is not None else 0.0
    cut = [s.scheduled_s for s in shares if s.scheduled_s is not None]
    length = min(point.duration_s, max(cut)) if point.duration_s is not None and cut else point.duration_s
    intended = start + length if length is not None and point.loop != Loop.BURST else start
    last = max((s.last_end for s in shares if s.last_end is not None), default=start)
    return max(intended, last) - start


def client_view(shares: list[ShareResult]) -> ClientView:
    """What the client spent: CPU per request (the yielding of an open loop waiting for its next send
    excluded), the ceiling that allows (requests/s on whole cores), and the share of it the point used.
    Saturated: a worker used CLIENT_SATURATED of its ceiling. Loop lag is reported: on a busy machine it
    says how late the OS ran the client, which is the machine's load, not the client's limit."""
    lag = histograms.summary_ms(histograms.merge([s.loop_lag for s in shares]))
    cpu = [100.0 * s.cpu_s / s.wall_s for s in shares if s.wall_s > 0]
    work = [(max(0.0, s.cpu_s - s.idle_cpu_s), s.handled, s.wall_s) for s in shares if s.wall_s > 0]
    busy = [w / wall for w, _, wall in work]
    per_request = [w / n for w, n, _ in work if n and w > 0]
    return ClientView(
        workers=len(shares),
        hosts=[s.host for s in shares],
        cpu_percent=round(sum(cpu) / len(cpu), 1) if cpu else None,
        cpu_per_request_us=round(1e6 * sum(per_request) / len(per_request), 2) if per_request else None,
        ceiling_requests_per_s=round(sum(1 / r for r in per_request), 1) if per_request else None,
        utilization=round(max(busy), 3) if busy else None,
        saturated=bool(busy and max(busy) >= CLIENT_SATURATED),
        loop_lag_p99_ms=lag.p99 if lag else None,
    )
