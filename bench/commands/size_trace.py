"""`ragbench size --trace FILE --slo p99=2s [--target-speed 3x] [--max-time 5m] --route ROUTE=NAME -e NAME=SPEC ...`:
the largest speed-up of a recorded trace that meets the SLO (bench/sizing/trace_size.py), and replicas.

Like `size`, it always answers: `--max-time` bounds the run (bench/sizing/budget.py; each probe fits what is left,
bench/sizing/trace_probe.py), the time expected is said up front and each probe as it runs, and when the budget
runs out, or SIGINT or SIGTERM stops the run, the `trace_size` record of what finished is written as a best-so-far,
with the results file's `end` record and the report (bench/results/lifecycle.py) — exit 0 for the budget (3 when
no probe was measured), 130/143 for the signals. `--out/trace-size.json` keeps its summary beside them.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict

from bench.commands.load_trace import routed_endpoints, trace_routes
from bench.commands.size import SizeRequest
from bench.commands.size_answer import nothing_measured
from bench.commands.trace_options import check_size_trace
from bench.core import values as v
from bench.core.errors import MeasurementFailed, UserError
from bench.core.interrupt import uninterruptible
from bench.endpoints.meter_trace import read_trace
from bench.endpoints.spec import EndpointSpec
from bench.load.sweep import load_header
from bench.load.trace_replay import TraceSettings, check_replay
from bench.load.workload import Workload, load_workload
from bench.results.lifecycle import OpenRun, Output, open_run
from bench.results.outdir import SIZE_FILE, check_out_dir
from bench.results.schema import Op, RunCommand, RunHeader, TraceSizeRecord, TraceSpeedProbe
from bench.sizing.budget import BudgetSpent, run_budget
from bench.sizing.slo import Slo, sig3
from bench.sizing.trace_probe import TraceProber
from bench.sizing.trace_size import SpeedSearch, TraceSize


def target_speed(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*[x×]?\s*", text)
    value = float(match.group(1)) if match else 0.0
    if not value > 0:
        raise UserError(f"--target-speed {text!r}: expected a positive factor, as 3x")
    return value


def trace_record(
    request: SizeRequest,
    slo: Slo,
    found: TraceSize,
    probes: list[TraceSpeedProbe],
    stopped: str | None,
    budget: tuple[float | None, float],
) -> TraceSizeRecord:
    """The search's answer; `budget`: --max-time (None: none) and the --target-speed factor, as checked."""
    max_time_s, target = budget
    return TraceSizeRecord(
        trace=str(request.trace),
        slo_ms=slo.ms,
        slo_percentile=slo.percentile,
        max_error_rate=slo.max_error_rate,
        max_speed=None if found.passed is None else found.passed.speed,
        failed_speed=None if found.failed is None else found.failed.speed,
        failed_because=None if found.failed is None else found.failed.reason,
        target_speed=target,
        replicas=found.replicas(target),
        probes=list(probes),
        stopped=stopped,
        too_busy=None if found.too_busy is None else f"at × {sig3(found.too_busy.speed)}: {found.too_busy.reason}",
        max_time_s=max_time_s,
    )


def _header(
    request: SizeRequest,
    mapped: dict[str, tuple[EndpointSpec, Op]],
    slo: Slo,
    times: tuple[float | None, float],
    workload: Workload,
) -> RunHeader:
    """The run's header; `times`: --max-time (None: no budget) and --timeout, in seconds, as checked."""
    specs = {spec.name: spec for spec, _ in mapped.values()}
    settings = {
        "trace": str(request.trace),
        "routes": {route: spec.name for route, (spec, _) in mapped.items()},
        "slo_ms": slo.ms,
        "slo_percentile": slo.percentile,
        "max_error_rate": slo.max_error_rate,
        "max_time_s": times[0],
        "timeout_s": times[1],
    }
    return load_header(RunCommand.SIZE, workload, list(specs.values()), request.seed, settings)


def _finish(run: OpenRun, request: SizeRequest, record: TraceSizeRecord, found: TraceSize) -> None:
    """The answer said, its record written with trace-size.json (whole: a signal waits until both are there)."""
    with uninterruptible():
        run.write(record)
        summary = {k: value for k, value in asdict(record).items() if k not in ("record",)}
        summary["probes"] = [
            {"speed": p.speed, "passed": p.passed, "outcome": p.outcome.value, "reason": p.reason} for p in found.probes
        ]
        (request.out / SIZE_FILE).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    best = f" — best so far ({record.stopped})" if record.stopped else ""
    print(f"size --trace: {found.sentence()}{best}")
    if record.too_busy:
        print(f"size --trace: the search ended on the machine, not the endpoint: {record.too_busy}")
    if record.replicas is not None:
        print(f"× {sig3(record.target_speed)}: {record.replicas} replica(s)")
    print(f"written: {request.out / SIZE_FILE}")


def size_trace_command(request: SizeRequest) -> None:
    """Search the speed within the budget, say each probe, write the results, trace-size.json and the report."""
    from bench.report import write_report

    assert request.trace is not None
    # size's own checks (--max-error-rate, --max-probes, ...), and the flags the trace path would not take
    slo, max_time_s = check_size_trace(request)
    budget = run_budget(max_time_s)  # from here: the trace's reading and the endpoints' preflight count too
    target = target_speed(request.target_speed) or 1.0  # checked before anything is measured
    timeout_s = v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS)
    check_out_dir(request.out, [], request.overwrite)
    calls = read_trace(request.trace)
    mapped = trace_routes(request.endpoints, request.route, calls)
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    # the requests a probe builds (one a call, whatever its speed) within load's memory bound, before anything is sent
    check_replay([c for c in calls if c.route in mapped], TraceSettings(timeout_s=timeout_s), workload)
    output = Output(request.out, request.overwrite, report=write_report, say=print, origin=request.origin)
    with (
        routed_endpoints(mapped, timeout_s) as endpoints,
        open_run(output, _header(request, mapped, slo, (max_time_s, timeout_s), workload)) as run,
    ):
        prober = TraceProber(endpoints, calls, slo, timeout_s, workload, budget)
        print(prober.expected_text(request.max_probes))
        try:
            _search(run, request, slo, prober, (max_time_s, target))
        finally:
            prober.close()
    if not prober.measured:
        raise MeasurementFailed(nothing_measured(max_time_s))


def _search(
    run: OpenRun, request: SizeRequest, slo: Slo, prober: TraceProber, budget: tuple[float | None, float]
) -> None:
    """The search to its end or the budget's, its answer written; after a signal, its best so far, then the stop.
    `budget`: --max-time and --target-speed, as checked."""
    search = SpeedSearch(prober.measure, request.max_probes, slo.ms)
    stopped = None
    try:
        search.run()
    except BudgetSpent as spent:
        stopped = str(spent)
    except KeyboardInterrupt as stop:
        why = f"stopped by {stop.args[0] if stop.args else 'SIGINT'}"
        search.adopt(prober.measured)
        _finish(
            run, request, trace_record(request, slo, search.answer(), prober.measured, why, budget), search.answer()
        )
        raise
    _finish(
        run, request, trace_record(request, slo, search.answer(), prober.measured, stopped, budget), search.answer()
    )
