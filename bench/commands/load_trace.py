"""`ragbench load --trace FILE [--speed X] [--loop] --route ROUTE=NAME -e NAME=SPEC ...`: replay a recorded trace
and compare it with its recording per route (bench/load/trace_replay.py, bench/load/trace_compare.py)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager

from bench.commands.load_request import LoadRequest
from bench.core import values as v
from bench.core.errors import UserError
from bench.endpoints.meter_trace import CallKind, TraceCall, read_trace
from bench.endpoints.spec import parse_endpoint_spec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.pool import worker_pool
from bench.load.trace_compare import RouteComparison, compare_route
from bench.load.trace_replay import TraceSettings, replay_trace
from bench.load.workload import load_workload
from bench.report.trace import REPLAY_FILE, verdict, write_trace_report
from bench.results.schema import Op


def trace_routes(endpoints: list[str], routes: list[str] | None, calls: list[TraceCall]) -> dict[str, tuple[str, Op]]:
    """--route ROUTE=NAME checked against the trace and -e: route -> (endpoint spec text, op)."""
    specs = {parse_endpoint_spec(text).name: text for text in endpoints}
    kinds = {c.route: c.kind for c in calls}
    mapped: dict[str, tuple[str, Op]] = {}
    for item in routes or []:
        route, sep, name = item.partition("=")
        if not sep or route not in kinds:
            raise UserError(f"--route {item!r}: expected ROUTE=NAME with ROUTE one of the trace's {sorted(kinds)}")
        if name not in specs:
            raise UserError(f"--route {item!r}: no endpoint {name!r} among -e {sorted(specs)}")
        if kinds[route] == CallKind.LLM:
            raise UserError(f"--route {item!r}: the route's calls are LLM calls; load replays embed and rerank")
        mapped[route] = specs[name], Op.RERANK if kinds[route] == CallKind.RERANK else Op.EMBED
    if not mapped:
        raise UserError(f"load --trace: map at least one of the trace's routes {sorted(kinds)}: --route ROUTE=NAME")
    return mapped


@contextmanager
def routed_endpoints(mapped: dict[str, tuple[str, Op]], timeout_s: float) -> Iterator[dict[str, LoadEndpoint]]:
    """Each mapped route's endpoint, opened (and checked with one small request) and closed at the end."""
    endpoints: dict[str, LoadEndpoint] = {}
    try:
        for route, (spec, op) in mapped.items():
            endpoints[route] = open_endpoints([parse_endpoint_spec(spec)], op, timeout_s)[0]
        yield endpoints
    finally:
        close_endpoints(list(endpoints.values()))


def trace_settings(request: LoadRequest, calls: list[TraceCall]) -> TraceSettings:
    if not (request.speed > 0 and math.isfinite(request.speed)):
        raise UserError(f"--speed {request.speed}: expected a positive factor, as 2 for twice as fast")
    loops = 1
    if request.loop:
        seconds = v.duration("--duration", request.duration or "10s", v.SECONDS)
        span = max(1e-3, (calls[-1].at - calls[0].at) / request.speed)
        loops = max(1, math.ceil(seconds / span))
    return TraceSettings(request.speed, loops, v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS))


def trace_command(request: LoadRequest) -> bool:
    """Replay, print the comparison, write it to --out/trace-replay.json; whether every call was answered."""
    assert request.trace is not None
    calls = read_trace(request.trace)
    mapped = trace_routes(request.endpoints, request.route, calls)
    settings = trace_settings(request, calls)
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    with routed_endpoints(mapped, settings.timeout_s) as endpoints:
        replays = replay_trace(endpoints, calls, settings, workload, worker_pool)
    rows = [compare_route(replay, settings.speed) for replay in replays]
    request.out.mkdir(parents=True, exist_ok=True)
    summary = {"trace": str(request.trace), "speed": settings.speed, "loops": settings.loops}
    (request.out / REPLAY_FILE).write_text(
        json.dumps(summary | {"routes": [r.to_json() for r in rows]}, indent=1) + "\n", encoding="utf-8"
    )
    for row in rows:
        print(comparison_line(row))
        print(f"  {verdict(row, settings.speed)}")
    print(f"written: {request.out / REPLAY_FILE}")
    print(f"report: {write_trace_report(request.out)}")
    return all(row.errors == 0 for row in rows)


def comparison_line(row: RouteComparison) -> str:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    ks = "-" if row.arrivals_ks_p is None else f"{row.arrivals_ks_p:.3f}"
    return (
        f"{row.route} -> {row.endpoint}: calls {row.calls_recorded} recorded / {row.calls_replayed} replayed, "
        f"p50 {ms(row.p50_recorded_ms)} / {ms(row.p50_replayed_ms)} ms, p99 {ms(row.p99_recorded_ms)} / "
        f"{ms(row.p99_replayed_ms)} ms, texts {row.texts_recorded} / {row.texts_replayed}"
        f"{' (identical per call)' if row.texts_identical else ' (differ)'}, inter-arrival KS p {ks}, "
        f"behind {row.behind}, errors {row.errors}"
    )
