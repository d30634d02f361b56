"""`ragbench size --trace FILE --slo p99=2s [--target-speed 3x] --route ROUTE=NAME -e NAME=SPEC ...`: the largest
speed-up of a recorded trace that meets the SLO (bench/sizing/trace_size.py), and replicas for a growth target."""

from __future__ import annotations

import json
import math
import re

from bench.commands.load_trace import routed_endpoints, trace_routes
from bench.commands.size import SizeRequest
from bench.core import values as v
from bench.core.errors import UserError
from bench.endpoints.meter_trace import read_trace
from bench.load.pool import worker_pool
from bench.load.trace_replay import TraceSettings, replay_trace
from bench.load.workload import load_workload
from bench.sizing.slo import parse_slo, sig3
from bench.sizing.trace_size import MIN_PROBE_CALLS, SpeedVerdict, judge_replay, search_speed

SIZE_FILE = "trace-size.json"


def target_speed(text: str | None) -> float | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*[x×]?\s*", text)
    value = float(match.group(1)) if match else 0.0
    if not value > 0:
        raise UserError(f"--target-speed {text!r}: expected a positive factor, as 3x")
    return value


def size_trace_command(request: SizeRequest) -> None:
    """Search the speed, print the answer, write --out/trace-size.json."""
    assert request.trace is not None
    calls = read_trace(request.trace)
    mapped = trace_routes(request.endpoints, request.route, calls)
    slo = parse_slo(request.slo, request.slo_p99_ms, request.max_error_rate)
    target = target_speed(request.target_speed)
    timeout_s = v.duration("--timeout", request.timeout, v.TIMEOUT_SECONDS)
    workload = load_workload(request.texts, request.dataset, request.tokenizer)
    loops = max(1, math.ceil(MIN_PROBE_CALLS / len(calls)))
    with routed_endpoints(mapped, timeout_s) as endpoints:

        def measure(speed: float) -> SpeedVerdict:
            replays = replay_trace(endpoints, calls, TraceSettings(speed, loops, timeout_s), workload, worker_pool)
            verdict = judge_replay(speed, replays, slo)
            print(f"× {sig3(speed)}: {'pass' if verdict.passed else 'fail: ' + verdict.reason}")
            return verdict

        found = search_speed(measure, request.max_probes)
    print(found.sentence())
    replicas = None if target is None else found.replicas(target)
    if target is not None:
        print(f"× {sig3(target)}: {replicas if replicas is not None else 'unknown'} replica(s)")
    request.out.mkdir(parents=True, exist_ok=True)
    summary = {
        "trace": str(request.trace),
        "slo": slo.text(),
        "max_speed": None if found.passed is None else found.passed.speed,
        "failed_speed": None if found.failed is None else found.failed.speed,
        "failed_because": None if found.failed is None else found.failed.reason,
        "target_speed": target,
        "replicas": replicas,
        "probes": [{"speed": p.speed, "passed": p.passed, "reason": p.reason} for p in found.probes],
    }
    (request.out / SIZE_FILE).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"written: {request.out / SIZE_FILE}")
