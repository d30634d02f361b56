"""Sizing figures, measured and printed (issue 11).

python benchmarks/bench_sizing.py size [--slo-p99 500] [--step 0.05]
    `ragbench size` with default settings against a real infinity-emb (MiniLM, CPU) started here:
    its wall time (target <= 5 min) and saturation rate, then a fine manual open-loop rate sweep
    (`ragbench load`, the same batch, arrival, length and SLO criterion, rates from 0.5x to 1.5x the
    found rate in steps of --step) and the highest rate below that sweep's first failure (target:
    within 15%).

python benchmarks/bench_sizing.py ceiling [--lengths 16,128] [--batch 1,32] [--rounds 3]
    `ragbench ceiling`'s texts/s against sentence-transformers' own `encode` on the same texts and
    batch (target: within 10%). The two alternate round by round, so load from other processes on a
    shared machine falls on both alike; the median of the rounds is compared.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from dataclasses import replace
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


def bench_size(slo_ms: float, step: float, out: Path) -> None:
    from bench.results.store import read_results
    from bench.sizing.size import Slo, passes
    from tests.conftest import INFINITY_VERSION
    from tests.harness.models import env_root, minilm_path
    from tests.harness.process import free_port, start_process, stop_process, wait_healthy

    port, model = free_port(), minilm_path()
    argv = [
        str(env_root() / f"infinity-emb-{INFINITY_VERSION}" / "bin" / "infinity_emb"),
        "v2",
        "--model-id",
        str(model),
        "--served-model-name",
        "minilm",
        "--engine",
        "torch",
        "--device",
        "cpu",
        "--no-bettertransformer",
        "--batch-size",
        "32",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    env = {"DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "HF_HUB_OFFLINE": "1"}
    out.mkdir(parents=True, exist_ok=True)
    proc = start_process("infinity-emb", argv, out / "infinity.log", env=env)
    spec = f"inf=openai@http://127.0.0.1:{port}?model=minilm"
    ragbench = [sys.executable, "-m", "bench"]
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", deadline_s=240)
        started = time.perf_counter()
        subprocess.run(
            [
                *ragbench,
                "size",
                "-e",
                spec,
                "--slo-p99",
                str(slo_ms),
                "--tokenizer",
                str(model),
                "--out",
                str(out / "size"),
                "--overwrite",
            ],
            check=True,
        )
        wall = time.perf_counter() - started
        (sizing,) = read_results(out / "size" / "results.jsonl").sizing
        found = sizing.saturation.rate
        sat_point = sizing.saturation.point
        if found is None:
            print(
                f"size: {wall:.0f} s wall (defaults), no saturation rate under {slo_ms:g} ms: "
                f"{[(p.rate, p.passed) for p in sizing.saturation.probes]}"
            )
            return
        batch = int(sat_point.split("batch ")[1].split()[0])
        print(
            f"size: {wall:.0f} s wall (defaults), saturation {found:.2f} requests/s at batch {batch} ({sat_point})",
            flush=True,
        )
        rates = [round(found * (0.5 + step * i), 3) for i in range(int(1.0 / step) + 1)]
        subprocess.run(
            [
                *ragbench,
                "load",
                "-e",
                spec,
                "--batch",
                str(batch),
                "--rate",
                ",".join(map(str, rates)),
                "--arrival",
                "poisson",
                "--lengths",
                "128",
                "--tokenizer",
                str(model),
                "--duration",
                "3s",
                "--warmup",
                "1s",
                "--out",
                str(out / "sweep"),
                "--overwrite",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        slo = Slo(slo_ms, sizing.max_error_rate)
        sweep = sorted(read_results(out / "sweep" / "results.jsonl").load_points, key=lambda p: p.rate)
        for p in sweep:
            print(
                f"  manual {p.rate:8.2f}/s  scheduled p99 "
                f"{p.latency_ms.scheduled.p99 if p.latency_ms.scheduled else float('nan'):9.1f} ms"
                f"  {'pass' if passes(p, slo, 'scheduled') else 'FAIL'}"
            )
        first_fail = next((p.rate for p in sweep if not passes(p, slo, "scheduled")), None)
        manual = max(
            (p.rate for p in sweep if passes(p, slo, "scheduled") and (first_fail is None or p.rate < first_fail)),
            default=None,
        )
        if manual is None:
            print("manual sweep: no passing rate")
        else:
            print(
                f"manual sweep saturation {manual:.2f} requests/s; size/manual = {found / manual:.3f} "
                f"({abs(found / manual - 1):.1%} apart)"
            )
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
    z.add_argument("--out", type=Path, default=Path("reports/bench-size"))
    args = parser.parse_args()
    if args.what == "size":
        bench_size(args.slo_p99, args.step, args.out)
    if args.what == "ceiling":
        bench_ceiling(
            [int(v) for v in args.lengths.split(",")],
            [int(v) for v in args.batch.split(",")],
            args.rounds,
            args.seconds,
        )


if __name__ == "__main__":
    main()
