"""`ragbench load --trace FILE [--speed X] [--loop] --route ROUTE=NAME -e NAME=SPEC ...`: replay a recorded trace
and compare it with its recording per route (bench/load/trace_replay.py, bench/load/trace_compare.py)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from bench.commands.load_request import LoadRequest
from bench.commands.specs import endpoint_specs
from bench.commands.trace_options import check_load_trace
from bench.core import values as v
from bench.core.errors import MeasurementFailed, UserError
from bench.core.interrupt import uninterruptible
from bench.endpoints.meter_trace import CallKind, TraceCall, read_trace
from bench.endpoints.spec import EndpointSpec
from bench.load.endpoint import LoadEndpoint, close_endpoints, open_endpoints
from bench.load.points import PointConfig
from bench.load.pool import worker_pool
from bench.load.stop_time import StopTime
from bench.load.trace_compare import RouteComparison, compare_route
from bench.load.trace_replay import (
    SPEED,
    StoppedReplay,
    TraceSettings,
    check_replay,
    loops_for,
    replay_trace,
    schedule_s,
)
from bench.load.workload import load_workload
from bench.report.trace import verdict, write_trace_report
from bench.results.outdir import REPLAY_FILE, check_out_dir
from bench.results.schema import Op


def trace_routes(
    endpoints: list[str], routes: list[str] | None, calls: list[TraceCall], say: Callable[[str], None] = print
) -> dict[str, tuple[EndpointSpec, Op]]:
    """--route ROUTE=NAME checked against the trace and -e: route -> (its endpoint's spec, op), each -e parsed
    once, here. A route given twice is refused (the later would replace the first); the trace's routes left
    unmapped are said, never dropped unsaid."""
    specs = {spec.name: spec for spec in endpoint_specs(endpoints)}
    kinds = _route_kinds(calls)
    mapped: dict[str, tuple[EndpointSpec, Op]] = {}
    for item in routes or []:
        route, sep, name = item.partition("=")
        if not sep or route not in kinds:
            raise UserError(f"--route {item!r}: expected ROUTE=NAME with ROUTE one of the trace's {sorted(kinds)}")
        if route in mapped:
            raise UserError(f"--route {item!r}: route {route!r} is mapped twice; give each route once")
        if name not in specs:
            raise UserError(f"--route {item!r}: no endpoint {name!r} among -e {sorted(specs)}")
        if kinds[route] == CallKind.LLM:
            raise UserError(f"--route {item!r}: the route's calls are LLM calls; load replays embed and rerank")
        mapped[route] = specs[name], Op.RERANK if kinds[route] == CallKind.RERANK else Op.EMBED
    if not mapped:
        raise UserError(f"load --trace: map at least one of the trace's routes {sorted(kinds)}: --route ROUTE=NAME")
    left = Counter(c.route for c in calls if c.route not in mapped)
    if left:
        said = ", ".join(f"{route} ({count:,} calls)" for route, count in sorted(left.items()))
        say(f"not replayed (no --route): {said}")
    return mapped


def _route_kinds(calls: list[TraceCall]) -> dict[str, CallKind]:
    """Each route's kind: its most common among calls with texts (the meter records a body it could not read as an
    LLM call of no texts; one such call, last, made a whole embed route 'LLM calls'), LLM where none has texts."""
    counts: dict[str, Counter[CallKind]] = {}
    for call in calls:
        counts.setdefault(call.route, Counter())[call.kind] += 1 if call.lengths else 0
    return {route: count.most_common(1)[0][0] if count.total() else CallKind.LLM for route, count in counts.items()}


@contextmanager
def routed_endpoints(mapped: dict[str, tuple[EndpointSpec, Op]], timeout_s: float) -> Iterator[dict[str, LoadEndpoint]]:
    """Each mapped route's endpoint, opened (and checked with one small request) and closed at the end."""
    endpoints: dict[str, LoadEndpoint] = {}
    try:
        for route, (spec, op) in mapped.items():
            endpoints[route] = open_endpoints([spec], op, timeout_s)[0]
        yield endpoints
    finally:
        close_endpoints(list(endpoints.values()))


def trace_settings(request: LoadRequest, calls: list[TraceCall], base: PointConfig) -> TraceSettings:
    """--speed, --loop/--duration and --timeout as the replay takes them (checked by check_replay); `base`: the
    --duration and --timeout load's own check parsed."""
    speed = v.number("--speed", request.speed, SPEED)
    loops = loops_for(calls, speed, base.duration_s or 0.0) if request.loop else 1
    return TraceSettings(speed, loops, base.timeout_s)


def trace_command(request: LoadRequest) -> bool:
    """Replay, print the comparison, write it to --out/trace-replay.json; whether every call was answered. Every
    option, --out and the replay's size are checked before anything is sent; after SIGINT or SIGTERM what was sent
    is written, then the stop goes on (130 / 143); a replay where no call was answered is exit 3."""
    assert request.trace is not None
    base = check_load_trace(request)
    check_out_dir(request.out, [], request.overwrite)  # before the replay: its results are never lost to --out
    calls = read_trace(request.trace)
    mapped = trace_routes(request.endpoints, request.route, calls)
    settings = trace_settings(request, calls, base)
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    replayed = [c for c in calls if c.route in mapped]
    check_replay(replayed, settings, workload)
    stop = StopTime()
    with routed_endpoints(mapped, settings.timeout_s) as endpoints:
        try:
            replays = replay_trace(
                endpoints,
                calls,
                settings,
                workload,
                lambda n: worker_pool(n, stop),
                _sending(replayed, settings),
                stop=stop,
            )
        except StoppedReplay as stopped:
            with uninterruptible():
                write_replay(request, settings, [compare_route(r, settings.speed) for r in stopped.replays])
            raise stopped.signal from None
    rows = [compare_route(replay, settings.speed) for replay in replays]
    write_replay(request, settings, rows)
    if rows and all(row.calls_replayed and row.errors == row.calls_replayed for row in rows):
        raise MeasurementFailed(f"no call of the replay was answered (report: {request.out / 'report.html'})")
    return all(row.errors == 0 for row in rows)


def _sending(calls: list[TraceCall], settings: TraceSettings) -> Callable[[], None]:
    """The replay's tick: one line once the workers are up and the sends have begun (a run of minutes says so)."""
    said: list[bool] = []

    def tick() -> None:
        if not said:
            said.append(True)
            lasts = float(schedule_s(calls, 1)[-1]) * settings.loops / settings.speed
            print(f"load --trace: sending {len(calls) * settings.loops:,} calls over ≈ {lasts:.3g} s", flush=True)

    return tick


def write_replay(request: LoadRequest, settings: TraceSettings, rows: list[RouteComparison]) -> None:
    """trace-replay.json and its report in --out (earlier ragbench files there replaced: checked up front), each
    route's comparison said."""
    for path in check_out_dir(request.out, [], request.overwrite):
        path.unlink()
    unwritten: str | None = None
    try:
        request.out.mkdir(parents=True, exist_ok=True)
        summary = {"trace": str(request.trace), "speed": settings.speed, "loops": settings.loops}
        text = json.dumps(summary | {"routes": [r.to_json() for r in rows]}, indent=1) + "\n"
        (request.out / REPLAY_FILE).write_text(text, encoding="utf-8")
    except OSError as exc:  # measured, not kept (a full disk): the comparison is still said below
        unwritten = f"--out {request.out}: cannot write {REPLAY_FILE} ({exc.strerror or exc}); the comparison above"
    for row in rows:
        print(comparison_line(row))
        print(f"  {verdict(row, settings.speed)}")
    if unwritten is not None:
        raise MeasurementFailed(f"{unwritten} is all that is left of the replay")
    print(f"written: {request.out / REPLAY_FILE}")
    try:
        print(f"report: {write_trace_report(request.out)}")
    except OSError as exc:
        raise MeasurementFailed(
            f"{REPLAY_FILE} is complete in {request.out}; the report could not be written ({exc.strerror or exc})"
        ) from None


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
