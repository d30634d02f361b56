"""Gate honesty on this machine (issue 17): `compare --min-throughput-ratio 0.95` on `load --repeat 5` runs
against loopback fixtures of known speed (tests/load/fixture_server.py: a fixed per-request service time,
requests served in parallel, so a closed loop's throughput is concurrency / (service time + overheads)).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_noise_gate.py [--pairs 20] [--repeat 5] [--seconds 1] \
        [--calibrate 10]

Three fixtures: A (--service-ms 50), B 25% slower (62.5 ms), C 3% slower (51.5 ms). First --calibrate runs of A
(the A/A calibration a CI runner makes once: `compare --calibration`), then runs go A1, B1, C1, A2, B2, C2, …,
A(pairs+1) (one closed-loop point, concurrency 8, each a whole `ragbench load --repeat N` sweep through
`run_load`, one worker pool kept across runs); then per i:
- A/A: compare A(i) with A(i+1): a failure is a false alarm (target: at most 1 in 20);
- 25% slower: A(i) with B(i): must fail (target: at least 19 in 20);
- 3% slower: A(i+1) with C(i): pass or inconclusive, never a failure (the true ratio 0.97 is above 0.95).
Each comparison is judged twice: on the repeats alone, and with the calibration runs' noise floor under the
interval (`compare --calibration`, the calibration runs being none of the compared ones).
Printed: each verdict count, the ratio intervals, the A/A spread (the noise floor docs/ci.md uses), the
machine's load average and the wall time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.endpoints.spec import parse_endpoint_spec  # noqa: E402
from bench.gate.calibration import Calibration, load_calibration  # noqa: E402
from bench.gate.compare import compare_paths  # noqa: E402
from bench.gate.config import GateConfig  # noqa: E402
from bench.load.plan import plan_sweep  # noqa: E402
from bench.load.points import PointConfig, SweepConfig  # noqa: E402
from bench.load.pool import stop_pool, worker_pool  # noqa: E402
from bench.load.sweep import run_load  # noqa: E402
from bench.load.workload import Workload  # noqa: E402
from bench.results.lifecycle import Output  # noqa: E402
from bench.results.schema import Op  # noqa: E402
from benchmarks.runner import load_average  # noqa: E402
from tests.harness.process import free_port, start_process, stop_process, wait_healthy  # noqa: E402

# A long service time next to the client's own per-request time (a few ms on this loaded machine): the
# fixtures' speed, not the client's scheduling, sets the throughput, so 25% slower shows as nearly ×0.8.
SERVICE_MS = {"A": 50.0, "B": 62.5, "C": 51.5}
CONCURRENCY = 8
MIN_RATIO = 0.95


class KeptPool(Executor):
    """The worker pool of every run: started once (spawning workers costs a second a run), never shut by one."""

    def __init__(self, pool: Executor):
        self.pool = pool

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self.pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def start_fixtures(logs: Path) -> tuple[dict[str, str], list]:
    urls, procs = {}, []
    server = ROOT / "tests" / "load" / "fixture_server.py"
    for name, service in SERVICE_MS.items():
        port = free_port()
        argv = [sys.executable, str(server), "--port", str(port), "--service-ms", str(service)]
        proc = start_process(f"fixture-{name}", argv, logs / f"fixture-{name}.log")
        procs.append(proc)
        urls[name] = f"http://127.0.0.1:{port}"
        wait_healthy(proc, f"{urls[name]}/metrics", deadline_s=30)
    return urls, procs


def measure(url: str, out: Path, repeat: int, seconds: float, pool: KeptPool) -> Path:
    base = PointConfig(op=Op.EMBED, concurrency=CONCURRENCY, duration_s=seconds, warmup_s=0.25, workers=1)
    sweep = SweepConfig(base, concurrencies=[CONCURRENCY], repeat=repeat)
    workload = Workload(["hello"], ["hello"], "one word", lambda ts: [1 for _ in ts], "words")
    return run_load(
        [parse_endpoint_spec(f"fixture=tei@{url}")],
        plan_sweep(sweep),
        workload,
        Output(out),
        pool_factory=lambda _: pool,
    )


def verdict(base: Path, cur: Path, calibration: Calibration) -> tuple[str, dict]:
    config = GateConfig(min_throughput_ratio=MIN_RATIO, calibration=calibration)
    (check,) = compare_paths(base, cur, config).checks
    (noise,) = check.figures["noise"]
    return noise["verdict"], noise


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="measured seconds per repeat of the point")
    parser.add_argument("--calibrate", type=int, default=10, help="A/A calibration runs of A made first")
    parser.add_argument("--rejudge", type=Path, help="judge the runs of an earlier run's folder again (no measuring)")
    args = parser.parse_args()
    if args.rejudge:
        rejudge(args.rejudge, args)
        return
    work = Path(tempfile.mkdtemp(prefix="noise-gate-"))
    print(f"runs in {work} (--rejudge it later)", flush=True)
    urls, procs = start_fixtures(work)
    pool = KeptPool(worker_pool(1))
    started, loads = time.perf_counter(), [load_average()]
    runs: dict[str, list[Path]] = {"A": [], "B": [], "C": []}
    try:
        calibration_runs = [
            measure(urls["A"], work / f"cal{i}", args.repeat, args.seconds, pool) for i in range(args.calibrate)
        ]
        print(f"{args.calibrate} calibration runs done, load average {load_average()}", flush=True)
        for i in range(args.pairs + 1):
            for name in ("A", "B", "C") if i < args.pairs else ("A",):
                runs[name].append(measure(urls[name], work / f"{name}{i}", args.repeat, args.seconds, pool))
            loads.append(load_average())
            print(f"round {i + 1}/{args.pairs + 1} done, load average {loads[-1]}", flush=True)
    finally:
        stop_pool(pool.pool)
        for proc in procs:
            stop_process(proc)
    wall = time.perf_counter() - started
    calibration = load_calibration(calibration_runs)
    report(runs, lambda i: Calibration(), "repeats alone", args)
    report(runs, lambda i: calibration, f"calibrated over the {args.calibrate} A/A runs made first", args)
    print(
        f"wall time {wall:.0f} s for {args.calibrate + sum(len(r) for r in runs.values())} runs; "
        f"load average {' → '.join(loads[::5])}"
    )


def rejudge(folder: Path, args: argparse.Namespace) -> None:
    """An earlier run's A, B and C runs (A0.., B0.., C0..) judged again: on the repeats alone, then calibrated
    split-half (the comparisons of the first half of the rounds by the A runs of the second half, and the other
    way round: a comparison is never calibrated by its own runs). For runs made before calibration existed."""
    runs = {name: sorted(folder.glob(f"{name}[0-9]*"), key=lambda p: int(p.name[1:])) for name in "ABC"}
    args.pairs = len(runs["B"])
    half = args.pairs // 2
    first, second = load_calibration(runs["A"][half + 1 :]), load_calibration(runs["A"][: half + 1])
    report(runs, lambda i: Calibration(), "repeats alone", args)
    report(runs, lambda i: first if i < half else second, "calibrated split-half by the other half's A runs", args)


def report(
    runs: dict[str, list[Path]], calibration_for: Callable[[int], Calibration], how: str, args: argparse.Namespace
) -> None:
    a, b, c = runs["A"], runs["B"], runs["C"]
    cal = calibration_for
    cases = {
        "A/A (same fixture)": [verdict(a[i], a[i + 1], cal(i)) for i in range(args.pairs)],
        "25% slower (service 50 -> 62.5 ms)": [verdict(a[i], b[i], cal(i)) for i in range(args.pairs)],
        "3% slower (service 50 -> 51.5 ms)": [verdict(a[i + 1], c[i], cal(i)) for i in range(args.pairs)],
    }
    floors = sorted({f"±{by['throughput'].spread:.1%}" for i in range(args.pairs) for by in cal(i).floors.values()})
    how += f" (throughput floor {', '.join(floors)})" if floors else ""
    print(
        f"\ncompare --min-throughput-ratio {MIN_RATIO} on load --repeat {args.repeat}, {args.seconds:g} s points, {how}"
    )
    for name, found in cases.items():
        counts = Counter(v for v, _ in found)
        ratios = [n["ratio"]["mean"] for _, n in found]
        spreads = [n["spread"] for _, n in found]
        print(
            f"{name}: fail {counts['fail']}, inconclusive {counts['inconclusive']}, pass {counts['pass']}; "
            f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
            f"spread ±{statistics.median(spreads):.1%} median, ±{max(spreads):.1%} max"
        )


if __name__ == "__main__":
    main()
