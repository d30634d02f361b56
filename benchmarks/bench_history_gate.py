"""The history as the gate's noise model, on this machine (issue 27, parts 3 and 4): a real series of load runs
against loopback fixtures of known speed (the machinery of bench_noise_gate.py), the server made 25% slower
from run `--slower-from` on.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_history_gate.py [--runs 40] [--slower-from 20] [--repeat 5] \
        [--seconds 1]

Runs 0 .. slower_from-1 measure fixture A (service 50 ms), the rest fixture B (62.5 ms, 25% slower), each a whole
`ragbench load --repeat N` of one closed-loop point (concurrency 8) under the endpoint name `fixture`. Then:
- the real series: `ragbench history` over every run finds the slowdown at run `slower_from` and no other change
  point (texts/s, p50, p99);
- `compare --min-throughput-ratio 0.95 --history` with the A runs as the history (the history a CI job holds when
  the slowdown lands): A/A, A(i) vs A(i+1), a failure is a false alarm (bench_noise_gate's target: at most 1 in
  20); 25% slower, A(i) vs B(slower_from + i), must fail (at least 19 in 20). The compared runs are in the history
  folder: the gate leaves them out itself. And a CI-like variant: the history is every run before the current one
  (for the B runs, it holds the change point and the B runs before: the floor comes from those since it).
`--rejudge DIR` judges an earlier run's folder again without measuring.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_noise_gate import KeptPool, load_average, measure, start_fixtures  # noqa: E402

from bench.gate.calibration import load_calibration  # noqa: E402
from bench.gate.compare import compare_paths  # noqa: E402
from bench.gate.config import GateConfig  # noqa: E402
from bench.gate.history_floor import with_history  # noqa: E402
from bench.history.changepoints import detect  # noqa: E402
from bench.history.series import read_history  # noqa: E402
from bench.load.pool import stop_pool, worker_pool  # noqa: E402
from tests.harness.process import stop_process  # noqa: E402

MIN_RATIO = 0.95


def run_folder(work: Path, i: int) -> Path:
    return work / f"run{i:03d}"


def measure_series(work: Path, args: argparse.Namespace) -> None:
    urls, procs = start_fixtures(work)
    pool = KeptPool(worker_pool(1))
    loads = [load_average()]
    try:
        for i in range(args.runs):
            fixture = "B" if i >= args.slower_from else "A"
            measure(urls[fixture], run_folder(work, i), args.repeat, args.seconds, pool)
            if i % 5 == 4:
                loads.append(load_average())
                print(f"run {i + 1}/{args.runs} done, load average {loads[-1]}", flush=True)
    finally:
        stop_pool(pool.pool)
        for proc in procs:
            stop_process(proc)
    print(f"load average {' → '.join(loads)}")


def real_series(work: Path) -> None:
    started = time.perf_counter()
    history = read_history([str(work)])
    print(f"\nragbench history {work}  ({len(history.runs)} runs)")
    for series in history.series:
        found = detect(series)
        said = ", ".join(f"run {c.run} ×{c.size:.3f} [{c.low:.3f}, {c.high:.3f}] p={c.p_value:.3g}" for c in found)
        print(f"{series.figure}: {len(found)} change point(s){': ' + said if said else ''}")
    print(f"read and analysed in {time.perf_counter() - started:.1f} s")


def verdict(base: Path, cur: Path, history: str) -> tuple[str, dict, list[str]]:
    config = with_history(GateConfig(min_throughput_ratio=MIN_RATIO, history=history), base, cur)
    comparison = compare_paths(base, cur, config)
    (check,) = comparison.checks
    noise = check.figures.get("noise") or [{"verdict": str(check.status), "ratio": {"mean": 0.0}, "spread": 0.0}]
    return noise[0]["verdict"], noise[0], comparison.notes


def before(work: Path, stop: int, keep: Path) -> str:
    """A folder of hard links to runs 0 .. stop-1: the history a CI job holds when run `stop` is measured."""
    for i in range(stop):
        target = keep / f"run{i:03d}"
        if not target.exists():
            target.mkdir(parents=True)
            (target / "results.jsonl").hardlink_to(run_folder(work, i) / "results.jsonl")
    return str(keep)


def report(name: str, found: list[tuple[str, dict, list[str]]]) -> None:
    counts = Counter(v for v, _, _ in found)
    ratios = [n["ratio"]["mean"] for _, n, _ in found]
    spreads = [n["spread"] for _, n, _ in found]
    floors = [n["calibration"]["spread"] for _, n, _ in found if n.get("calibration")]
    runs = [n["calibration"]["runs"] for _, n, _ in found if n.get("calibration")]
    print(
        f"{name}: fail {counts['fail']}, inconclusive {counts['inconclusive']}, pass {counts['pass']}; "
        f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
        f"interval ±{statistics.median(spreads):.1%} median; floor "
        + (f"±{min(floors):.1%} – ±{max(floors):.1%} from {min(runs)}–{max(runs)} runs" if floors else "none")
    )


def calibrated(base: Path, cur: Path, runs: list[Path]) -> tuple[str, dict, list[str]]:
    """The same comparison with `--calibration` over `runs` less the compared ones (hand-made A/A runs)."""
    others = [r for r in runs if r not in (base, cur)]
    config = GateConfig(min_throughput_ratio=MIN_RATIO, calibration=load_calibration(others))
    (check,) = compare_paths(base, cur, config).checks
    noise = check.figures["noise"]
    return noise[0]["verdict"], noise[0], []


def judge(work: Path, args: argparse.Namespace) -> None:
    links = Path(tempfile.mkdtemp(prefix="history-gate-links-"))  # outside `work`: its histories are not runs
    k = args.slower_from
    pairs = min(k - 1, args.runs - k)
    a_runs = [run_folder(work, i) for i in range(k)]
    history = before(work, k, links / "history-A")
    aa = [(run_folder(work, i), run_folder(work, i + 1)) for i in range(k - 1)]
    slower = [(run_folder(work, i), run_folder(work, k + i)) for i in range(pairs)]
    print(f"\ncompare --min-throughput-ratio {MIN_RATIO} --history (the {k} A runs; the compared ones left out)")
    report("A/A: A(i) vs A(i+1)", [verdict(b, c, history) for b, c in aa])
    found = [verdict(b, c, history) for b, c in slower]
    report("25% slower: A(i) vs B(k+i)", found)
    print(f"e.g. {found[0][2][-1] if found[0][2] else '(no note)'}")
    print(f"\nthe same with --calibration: the {k} A runs less the compared ones, as hand-made A/A runs")
    report("A/A: A(i) vs A(i+1)", [calibrated(b, c, a_runs) for b, c in aa])
    report("25% slower: A(i) vs B(k+i)", [calibrated(b, c, a_runs) for b, c in slower])
    print("\ncompare --history (every run before the current one, CI-like)")
    ci_aa = [
        verdict(run_folder(work, i), run_folder(work, i + 1), before(work, i + 1, links / f"h{i + 1}"))
        for i in range(3, k - 1)
    ]
    report(f"A/A: A(i) vs A(i+1), i = 3 .. {k - 2}", ci_aa)
    ci = [
        verdict(run_folder(work, k - 1), run_folder(work, k + i), before(work, k + i, links / f"h{k + i}"))
        for i in range(pairs)
    ]
    report(f"25% slower: A({k - 1}) vs B(k+i)", ci)
    for i in (0, pairs - 1):
        print(f"B({k + i}): {ci[i][2][-1] if ci[i][2] else '(no note)'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--slower-from", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="measured seconds per repeat of the point")
    parser.add_argument("--rejudge", type=Path, help="judge the runs of an earlier run's folder again (no measuring)")
    args = parser.parse_args()
    started = time.perf_counter()
    work = args.rejudge or Path(tempfile.mkdtemp(prefix="history-gate-"))
    if args.rejudge:
        args.runs = len(list(work.glob("run[0-9]*")))
    else:
        print(f"runs in {work} (--rejudge it later)", flush=True)
        measure_series(work, args)
    measured = time.perf_counter() - started
    real_series(work)
    judge(work, args)
    print(f"\nwall time {time.perf_counter() - started:.0f} s ({measured:.0f} s measuring {args.runs} runs)")


if __name__ == "__main__":
    main()
