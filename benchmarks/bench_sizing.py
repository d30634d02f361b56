"""Sizing figures, measured and printed (issue 11).

python benchmarks/bench_sizing.py size [--slo-p99 500] [--step 0.05] [--batch 1,8,32] [--again] [--server queue:MS]
    `ragbench size` with default settings (but --batch) against a real infinity-emb (MiniLM, CPU) started here
    (or, --server queue:MS, a server of fixed capacity 1000/MS requests/s, tests/sizing/queue_server.py):
    its wall time (target <= 5 min) and saturation rate, then a fine manual open-loop rate sweep
    (`ragbench load`, rates from 0.5x to 1.5x the found rate in steps of --step, measured in a seeded random
    order) read two ways: the highest rate below the sweep's first failure, and the highest rate the
    verdicts' monotone fit passes at least half the time (target: within 15%). Each manual rate is judged exactly as
    `size` judges a probe: the same batch, arrival, length, warm-up and probe length (100 requests at
    least), the same SLO criterion, and a failing rate re-measured, the majority of up to three measurements
    deciding (bench.sizing.search.judge_probe). --again runs size once more after the sweep: size/size is how far
    the machine itself moved in the meantime, the floor under any size/manual comparison.
    Load averages and wall times are printed beside the figures.

python benchmarks/bench_sizing.py ceiling [--lengths 16,128] [--batch 1,32] [--rounds 3]
    `ragbench ceiling`'s texts/s against sentence-transformers' own `encode` on the same texts and
    batch (target: within 10%). The two alternate round by round, so load from other processes on a
    shared machine falls on both alike; the median of the rounds is compared.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from bench.endpoints.reference import default_embedding_model
from bench.load.workload import load_workload
from bench.sizing.ceiling import CeilingConfig, measure_ceiling


def _plain_encode(model, texts: list[str], batch: int, seconds: float) -> float:
    """texts/s of `model.encode` as a user calls it: whole calls, timed until `seconds` have passed."""
    model.encode(texts, batch_size=batch, show_progress_bar=False)  # the same whole-call warm-up as the ceiling's
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        model.encode(texts, batch_size=batch, show_progress_bar=False)
        done += len(texts)
    return done / (time.perf_counter() - started)


def bench_ceiling(lengths: list[int], batches: list[int], rounds: int, seconds: float) -> None:
    from sentence_transformers import SentenceTransformer

    path = default_embedding_model()
    model = SentenceTransformer(str(path), device="cpu")
    workload = load_workload(None, None, path)
    print(f"{'length':>6} {'batch':>5} {'ceiling texts/s':>16} {'encode texts/s':>15} {'ratio':>6}")
    for length in lengths:
        texts = workload.with_length(length).texts
        for batch in batches:
            ours, theirs = [], []
            config = CeilingConfig(model=path, batches=(batch,), lengths=(length,), min_seconds=seconds)
            for _ in range(rounds):
                ours.extend(p.texts_per_s for p in measure_ceiling(replace(config)))
                n = max(batch * 3, 64)
                theirs.append(_plain_encode(model, (texts * (n // len(texts) + 1))[:n], batch, seconds))
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{length:>6} {batch:>5} {a:>16.1f} {b:>15.1f} {a / b:>6.3f}", flush=True)


def _infinity_argv(port: int, model: Path) -> list[str]:
    from tests.harness.models import infinity_argv

    return infinity_argv(((model, "minilm"),), port)


def _load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _sweep_point(spec: str, batch: int, model: Path, rate: float, seed: int, out: Path, slo_ms: float):
    """One manual point as `ragbench load` measures it, lasting exactly what `size`'s probe at this rate lasts."""
    from bench.commands.load import load_command
    from bench.commands.load_request import LoadRequest
    from bench.commands.size import SizeRequest
    from bench.core import values as v
    from bench.core.errors import MeasurementFailed
    from bench.results.store import read_results
    from bench.sizing.plan import probe_duration
    from bench.sizing.verdict import requests_to_bound

    defaults = SizeRequest([], out, slo_p99_ms=0.0)  # size's own --duration and --warmup, which the sweep must match
    duration_s = v.duration("--duration", defaults.duration, v.SECONDS)
    requests = defaults.probe_requests or requests_to_bound(99.0)  # size's default for its p99 SLO
    seconds = probe_duration(rate, duration_s, requests, slo_ms=slo_ms)  # size's floor: 5 SLOs
    folder = out / f"{rate:g}-seed{seed}"
    request = LoadRequest(
        endpoints=[spec],
        out=folder,
        batch=str(batch),
        rate=str(rate),
        arrival=defaults.arrival,
        lengths=defaults.lengths,
        tokenizer=model,
        duration=f"{seconds:g}s",
        warmup=defaults.warmup,
        seed=seed,
        overwrite=True,
    )
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(MeasurementFailed):
        load_command(request)  # a point with no success is a failed probe here, not the end of the sweep
    (point,) = read_results(folder / "results.jsonl").load_points
    return point


@dataclass
class ManualSweep:
    first_failure_reading: float | None  # the highest passing rate below the first failing one
    majority_reading: float | None  # the highest rate that the monotone fit of the verdicts passes half the time
    top: float  # the sweep's highest rate: a reading there is a lower bound


def _manual_sweep(spec: str, batch: int, model: Path, rates: list[float], slo, out: Path) -> ManualSweep:
    """Every rate judged as `size` judges a probe (bench.sizing.search.judge_probe: the same criterion, probe length
    and re-measure of a failing probe), the rates measured in a seeded random order: on a shared machine a
    minute of heavy neighbours fails whatever rates run during it, and in rate order that is a run of
    neighbouring rates that reads as a saturation. Two readings: the highest passing rate below the first
    failure (in rate order), and the highest rate where the verdicts' non-increasing fit (isotonic regression
    of pass = 1 / fail = 0 on the rate) is at least 1/2 — where the rate fails more often than it passes."""
    from scipy.optimize import isotonic_regression

    from bench.sizing.search import judge_probe

    seeds = itertools.count(10_000)  # size's probes use seeds from 0
    order = random.Random(0).sample(rates, len(rates))
    judged = {
        r: judge_probe(lambda r: _sweep_point(spec, batch, model, r, next(seeds), out, slo.ms), r, slo) for r in order
    }
    probes = [judged[r] for r in rates]
    for p in probes:
        earlier = "".join(f"{_p99(e):7.1f} ms {'pass' if e is not p.earlier[0] else 'FAIL'}, " for e in p.earlier)
        print(
            f"  manual {p.rate:8.2f}/s  (measured {order.index(p.rate) + 1:2d}th)  "
            f"{p.point.requests.sent:3d} requests  {earlier}"
            f"scheduled p99 {_p99(p.point):7.1f} ms  {'pass' if p.passed else 'FAIL'}",
            flush=True,
        )
    first_fail = next((p.rate for p in probes if not p.passed), None)
    below = [p.rate for p in probes if p.passed and (first_fail is None or p.rate < first_fail)]
    fit = isotonic_regression([1.0 if p.passed else 0.0 for p in probes], increasing=False).x
    majority = [p.rate for p, f in zip(probes, fit, strict=True) if f >= 0.5]
    return ManualSweep(max(below, default=None), max(majority, default=None), rates[-1])


def _p99(point) -> float:
    return point.latency_ms.scheduled.p99 if point.latency_ms.scheduled else float("nan")


def _run_size(size: list[str], out: Path, slo_ms: float) -> tuple[float | None, int, float]:
    """One `ragbench size` run: its saturation rate (None: no rate met the SLO), batch and max error rate."""
    from bench.results.store import read_results

    print(f"load average before size: {_load_average()}", flush=True)
    started = time.perf_counter()
    code = subprocess.run([*size, "--out", str(out), "--overwrite"]).returncode
    wall = time.perf_counter() - started
    if code not in (0, 3):  # 3: a point measured nothing (said above); the sizing record is still written
        raise SystemExit(f"size exited {code}")
    (sizing,) = read_results(out / "results.jsonl").sizing
    found, sat_point = sizing.saturation.rate, sizing.saturation.point
    probes = ", ".join(
        f"{p.rate:.2f} {'✓' if p.passed else '✗'}{'r' * ((p.measurements or 1) - 1)}" for p in sizing.saturation.probes
    )
    if found is None or sat_point is None:
        print(f"size: {wall:.0f} s wall (defaults), no saturation rate under {slo_ms:g} ms: {probes}")
        return None, 0, sizing.max_error_rate
    batch = int(sat_point.split("batch ")[1].split()[0])
    print(f"size: {wall:.0f} s wall (defaults), saturation {found:.2f} requests/s at batch {batch} ({sat_point})")
    print(f"size's probes (r: each re-measurement): {probes}; load average {_load_average()}", flush=True)
    return found, batch, sizing.max_error_rate


def _start_server(server: str, port: int, model: Path, out: Path):
    """`infinity`: real infinity-emb on this machine's CPU, whose capacity moves with the neighbours' load;
    `queue:MS`: tests/sizing/queue_server.py, one request at a time, MS each — a capacity of exactly 1000/MS
    requests/s whatever else the machine does (it sleeps; it does not compute). Returns (process, spec, health URL)."""
    from tests.harness.process import start_process

    url = f"http://127.0.0.1:{port}"
    if server.startswith("queue:"):
        argv = [sys.executable, "tests/sizing/queue_server.py", "--port", str(port), "--service-ms", server[6:]]
        return start_process("queue-server", argv, out / "queue.log"), f"q=tei@{url}", f"{url}/metrics"
    env = {"DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "HF_HUB_OFFLINE": "1"}
    proc = start_process("infinity-emb", _infinity_argv(port, model), out / "infinity.log", env=env)
    return proc, f"inf=openai@{url}?model=minilm", f"{url}/health"


def bench_size(slo_ms: float, step: float, batches: str, again: bool, server: str, out: Path) -> None:
    from bench.sizing.slo import Slo
    from tests.harness.models import minilm_path
    from tests.harness.process import free_port, stop_process, wait_healthy

    port, model = free_port(), minilm_path()
    out.mkdir(parents=True, exist_ok=True)
    proc, spec, health = _start_server(server, port, model, out)
    size = [sys.executable, "-m", "bench", "size", "-e", spec, "--slo-p99", str(slo_ms), "--batch", batches]
    size += ["--tokenizer", str(model)]
    try:
        wait_healthy(proc, health, deadline_s=240)
        found, batch, max_error_rate = _run_size(size, out / "size", slo_ms)
        if found is None:
            return
        rates = [round(found * (0.5 + step * i), 3) for i in range(int(1.0 / step) + 1)]
        started = time.perf_counter()
        manual = _manual_sweep(spec, batch, model, rates, Slo(slo_ms, max_error_rate), out / "sweep")
        wall = time.perf_counter() - started
        print(f"manual sweep: {len(rates)} rates, {wall:.0f} s wall; load average {_load_average()}")
        for name, reading in (
            ("below its first failure", manual.first_failure_reading),
            ("where it fails more often than it passes", manual.majority_reading),
        ):
            if reading is None:
                print(f"manual sweep saturation, {name}: no passing rate")
                continue
            bound = "≥ " if reading == manual.top else ""  # every rate passed: the sweep's top is a lower bound
            print(
                f"manual sweep saturation, {name}: {bound}{reading:.2f} requests/s; size/manual = "
                f"{found / reading:.3f} ({abs(found / reading - 1):.1%} apart)"
            )
        if again:  # the same size once more, after the sweep: how far the machine itself moved (A/A)
            second, _, _ = _run_size(size, out / "size-again", slo_ms)
            if second is not None:
                print(f"size again: {second:.2f} requests/s; second/first = {second / found:.3f}", flush=True)
    finally:
        stop_process(proc)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("ceiling")
    c.add_argument("--lengths", default="16,128")
    c.add_argument("--batch", default="1,32")
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--seconds", type=float, default=2.0)
    z = sub.add_parser("size")
    z.add_argument("--slo-p99", type=float, default=500.0)
    z.add_argument("--step", type=float, default=0.05)
    z.add_argument("--batch", default="1,8,32", help="size's --batch (its default: 1,8,32)")
    z.add_argument("--server", default="infinity", help="infinity, or queue:MS (a capacity of exactly 1000/MS per s)")
    z.add_argument("--again", action="store_true", help="run size once more after the sweep (A/A: the machine's drift)")
    z.add_argument("--out", type=Path, default=Path("reports/bench-size"))
    args = parser.parse_args()
    if args.what == "size":
        bench_size(args.slo_p99, args.step, args.batch, args.again, args.server, args.out)
    if args.what == "ceiling":
        bench_ceiling(
            [int(v) for v in args.lengths.split(",")],
            [int(v) for v in args.batch.split(",")],
            args.rounds,
            args.seconds,
        )


if __name__ == "__main__":
    main()
