"""`size --trace` against the steady-state truth of a server of known capacity (issue 35's accuracy target: the answer
within −15%/+5% of the truth).

    PYTHONPATH=. .venv/bin/python benchmarks/trace_size_truth.py [--cases constant,poisson] [--out DIR]

The truth oracle (`truth_speed`): a queue simulation driven by the trace's own arrivals and per-call service times —
`servers` FIFO servers, the trace looped end to end as `load --trace` loops it (period = span + one mean gap), its
arrivals divided by the speed — and the largest speed whose steady-state percentile meets the SLO (bisection; the
simulation runs ≥ 100,000 calls and drops its first tenth, the empty start; a speed at or past the servers'
capacity never settles and fails). Each case writes a trace, starts tests/load/fixture_server.py with `--serial 1`
(one request at a time in arrival order, `--service-ms` each: a known service time), runs
`ragbench size --trace` against it and prints the answer, the truth and their ratio. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.process import free_port, start_process, stop_process, wait_healthy  # noqa: E402

MIN_CALLS = 100_000  # calls a steady-state simulation runs (the trace looped)
WARMUP_SHARE = 0.1  # the share of them dropped: the queue's empty start


def fifo_latencies(arrivals_s: np.ndarray, service_s: np.ndarray, servers: int = 1) -> np.ndarray:
    """Each call's latency (wait + service) in a FIFO queue of `servers` identical servers; arrivals sorted."""
    free = [0.0] * servers
    latencies = np.empty(len(arrivals_s))
    for i, (arrival, service) in enumerate(zip(arrivals_s.tolist(), service_s.tolist(), strict=True)):
        start = max(arrival, heapq.heappop(free))
        heapq.heappush(free, start + service)
        latencies[i] = start + service - arrival
    return latencies


def looped(at_s: np.ndarray, loops: int) -> np.ndarray:
    """The trace's arrivals played `loops` times end to end, as the replay plays them (bench/load/trace_replay.py)."""
    arrivals = np.asarray(at_s, dtype=float) - float(at_s[0])
    period = float(arrivals[-1]) + (float(np.mean(np.diff(arrivals))) if len(arrivals) > 1 else 1.0)
    return np.concatenate([arrivals + loop * period for loop in range(loops)])


@dataclass(frozen=True)
class QueueTrace:
    """A trace as the oracle sees it: arrivals (s) and each call's service time (s) on one server."""

    at_s: np.ndarray
    service_s: np.ndarray
    servers: int = 1

    @property
    def capacity_speed(self) -> float:
        """The speed at which the servers are busy all the time (the looped trace's work over its period)."""
        period = float(looped(self.at_s, 2)[len(self.at_s)])
        return self.servers * period / float(np.sum(self.service_s))


def steady_percentile_s(trace: QueueTrace, speed: float, percentile: float, min_calls: int = MIN_CALLS) -> float:
    """The steady-state `percentile` of the latency at `speed` (inf at or past capacity: the queue never settles)."""
    if speed >= trace.capacity_speed:
        return math.inf
    loops = max(2, math.ceil(min_calls / len(trace.at_s)))
    latencies = fifo_latencies(looped(trace.at_s, loops) / speed, np.tile(trace.service_s, loops), trace.servers)
    return float(np.percentile(latencies[int(len(latencies) * WARMUP_SHARE) :], percentile))


def truth_speed(trace: QueueTrace, slo_s: float, percentile: float, tolerance: float = 1e-3) -> float:
    """The largest speed whose steady-state percentile is ≤ `slo_s` (latency grows with the speed: bisection)."""
    low, high = 0.0, trace.capacity_speed
    while high - low > tolerance * high:
        mid = (low + high) / 2
        low, high = (mid, high) if steady_percentile_s(trace, mid, percentile) <= slo_s else (low, mid)
    return low


@dataclass(frozen=True)
class Case:
    name: str
    at_s: np.ndarray
    service_ms: float
    slo_ms: float


def cases() -> dict[str, Case]:
    """A constant 40 calls/s (D/D/1: the truth is the capacity), and Poisson 40 calls/s (M/D/1 within the trace)."""
    rng = np.random.default_rng(5)
    poisson = np.cumsum(rng.exponential(1 / 40, 300))
    return {
        "constant": Case("constant", np.arange(100) * 0.025, 10.0, 100.0),
        "poisson": Case("poisson", poisson - poisson[0], 10.0, 50.0),
        "poisson-p99-100": Case("poisson-p99-100", poisson - poisson[0], 10.0, 100.0),
    }


def run_case(case: Case, out: Path) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    trace = out / "trace.csv"
    rows = [f"{at:.6f},embedding,embed,1,chars,40,,200,0.01" for at in case.at_s]
    trace.write_text("at,route,kind,texts,unit,lengths,query,status,latency\n" + "\n".join(rows) + "\n")
    truth = truth_speed(QueueTrace(case.at_s, np.full(len(case.at_s), case.service_ms / 1000)), case.slo_ms / 1000, 99)
    port = free_port()
    server_argv = [sys.executable, str(ROOT / "tests/load/fixture_server.py"), "--port", str(port), "--serial", "1"]
    server = start_process("serial", [*server_argv, "--service-ms", str(case.service_ms)], out / "server.log")
    try:
        wait_healthy(server, f"http://127.0.0.1:{port}/metrics", deadline_s=30)
        argv = [sys.executable, "-m", "bench", "size", "-e", f"fx=tei@http://127.0.0.1:{port}", "--trace", str(trace)]
        argv += ["--route", "embedding=fx", "--slo-p99", f"{case.slo_ms:g}", "--max-probes", "12", "--out", str(out)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    finally:
        stop_process(server)
    (out / "size.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    found = json.loads((out / "trace-size.json").read_text()) if done.returncode == 0 else {}
    answer = found.get("max_speed")
    return {
        "case": case.name,
        "service_ms": case.service_ms,
        "slo_p99_ms": case.slo_ms,
        "capacity_speed": QueueTrace(case.at_s, np.full(len(case.at_s), case.service_ms / 1000)).capacity_speed,
        "truth_speed": truth,
        "answer": answer,
        "failed_speed": found.get("failed_speed"),
        "ratio": None if answer is None else answer / truth,
        "probes": [(p["speed"], p["passed"], p["reason"]) for p in found.get("probes", [])],
        "exit": done.returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="constant,poisson,poisson-p99-100")
    parser.add_argument("--out", type=Path, default=ROOT / "reports/trace-size-truth")
    args = parser.parse_args()
    known = cases()
    for name in args.cases.split(","):
        print(json.dumps(run_case(known[name], args.out / name)), flush=True)


if __name__ == "__main__":
    main()
