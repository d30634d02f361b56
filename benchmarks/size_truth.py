"""`ragbench size` against the steady-state truth of a server whose service time is known (issue 32, section 1).

    PYTHONPATH=. .venv/bin/python benchmarks/size_truth.py [--cases 400:p95=2s,400:p99=2s,50:p95=250ms,50:p99=250ms]
        [--max-time 300s] [--out reports/size-truth]
    PYTHONPATH=. .venv/bin/python benchmarks/size_truth.py --cases lognormal:148:1.5:4:p95=600ms   # heavy tails

A `lognormal:MEAN:CV:SLOTS:SLO` case starts the queue server with `--service-ms MEAN --service-cv CV --slots SLOTS`
(issue 45: a reranker's or an LLM-backed service's tail) and its truth is a queue simulation (M/G/c, Poisson
arrivals, 400,000 requests) from the server's own seeded service draws (`queue_server.service_draws`).

Each case starts tests/sizing/queue_server.py (one FIFO slot, SERVICE ms per request, whatever the batch), runs
`ragbench size -e q=tei@URL --slo SLO --max-time T --no-nvml` (everything else default) and compares the answer with
the M/G/1 truth of the server's own service time (`bench.sizing.steady.mg1_saturation`: Poisson arrivals, the
Lindley recursion over 200,000 requests): the highest rate whose steady-state percentile stays within the SLO.
Target: the answer within −15%/+5% of the truth. The cases run one after another (a few minutes each).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from runner import load_average, start_queue_server  # noqa: E402

from bench.sizing.service_model import mgc_response_s  # noqa: E402
from bench.sizing.slo import parse_slo  # noqa: E402
from bench.sizing.steady import mg1_saturation  # noqa: E402
from tests.sizing.queue_server import service_draws  # noqa: E402

TRUTH_REQUESTS = 400_000


def mgc_truth(mean_ms: float, cv: float, slots: int, slo_s: float, percentile: float) -> tuple[float, float]:
    """(the highest Poisson rate whose simulated steady percentile keeps `slo_s`, the capacity) of the server's own
    service draws in `slots` slots (bisection to 0.2%)."""
    draws = service_draws(mean_ms, cv, TRUTH_REQUESTS)
    capacity = slots / float(np.mean(draws))
    low, high = 0.0, capacity
    while high - low > 0.002 * high:
        mid = (low + high) / 2
        response = mgc_response_s(draws, slots, mid, TRUTH_REQUESTS, seed=1)[TRUTH_REQUESTS // 10 :]
        low, high = (mid, high) if np.percentile(response, percentile) <= slo_s else (low, mid)
    return low, capacity


from tests.harness.process import stop_process  # noqa: E402


def probe_row(p: dict) -> tuple:
    """One probe of the sizing record: rate, carried rate, verdict, requests, unsteady, cut short."""
    verdict = (
        "pass" if p["passed"] else "inconclusive" if p.get("inconclusive") else "busy" if p.get("too_busy") else "fail"
    )
    rate, carried, requests = p["rate"], p.get("carried_rate"), p.get("requests")
    return (rate, carried, verdict, requests, p.get("unsteady") is not None, p.get("unconfirmed") is not None)


def run_size(url: str, slo_text: str, max_time: str, out: Path) -> tuple[subprocess.CompletedProcess, float, str]:
    """`ragbench size` against the server at `url`: the finished process, its wall time, the load before it."""
    args = ["-e", f"q=tei@{url}", "--slo", slo_text, "--max-time", max_time, "--no-nvml"]
    started, load_before = time.monotonic(), load_average()
    done = subprocess.run(
        [sys.executable, "-m", "bench", "size", *args, "--out", str(out / "run"), "--overwrite"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done, time.monotonic() - started, load_before


def run_case(
    service_ms: float, slo_text: str, max_time: str, out: Path, heavy: tuple[float, int] | None = None
) -> dict[str, object]:
    """One size run against a fresh queue server; the answer, its interval and the truth. `heavy`: (CV, slots) of a
    lognormal service."""
    slo = parse_slo(slo_text, None, 0.001)
    if heavy is None:
        truth = mg1_saturation(np.array([service_ms / 1000.0]), slo.ms / 1000.0, slo.percentile)
        extra: list[str] = []
    else:
        truth, _ = mgc_truth(service_ms, heavy[0], heavy[1], slo.ms / 1000.0, slo.percentile)
        extra = ["--service-cv", str(heavy[0]), "--slots", str(heavy[1])]
    out.mkdir(parents=True, exist_ok=True)
    url, server = start_queue_server(out / "server.log", "--service-ms", str(service_ms), *extra)
    try:
        done, wall, load_before = run_size(url, slo_text, max_time, out)
    finally:
        stop_process(server)
    (out / "size.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    records = [json.loads(line) for line in (out / "run/results.jsonl").read_text().splitlines() if line.strip()]
    sizing = next(r for r in records if r.get("record") == "sizing")["saturation"]
    return {
        "case": f"{service_ms:g} ms{f' lognormal CV {heavy[0]:g} x {heavy[1]} slots' if heavy else ''}, {slo_text}",
        "truth": truth,
        "rate": sizing["rate"],
        "first_failure": sizing["first_failure"],
        "lower_bound": sizing.get("lower_bound"),
        "inconclusive": sizing.get("inconclusive", []),
        "tighter": sizing.get("tighter"),
        "load_average": f"{load_before} -> {load_average()}",
        "unconfirmed": sizing.get("unconfirmed", []),  # passes on windows the budget cut short
        "probes": [probe_row(p) for p in sizing["probes"]],
        "exit": done.returncode,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="400:p95=2s,400:p99=2s,50:p95=250ms,50:p99=250ms")
    parser.add_argument("--max-time", default="300s")
    parser.add_argument("--out", type=Path, default=ROOT / "reports/size-truth")
    args = parser.parse_args()
    for case in args.cases.split(","):
        parts = case.split(":")
        folder = args.out / case.replace(":", "-").replace("=", "-")
        if parts[0] == "lognormal":
            heavy = (float(parts[2]), int(parts[3]))
            result = run_case(float(parts[1]), parts[4], args.max_time, folder, heavy)
        else:
            result = run_case(float(parts[0]), parts[1], args.max_time, folder)
        rate, truth = result["rate"], float(result["truth"])  # type: ignore[arg-type]
        ratio = f"{float(rate) / truth - 1:+.1%}" if isinstance(rate, float) else "no answer"  # type: ignore[arg-type]
        contains = isinstance(rate, float) and rate <= truth <= (result["first_failure"] or float("inf"))  # type: ignore[operator]
        print(json.dumps({**result, "vs_truth": ratio, "interval_contains_truth": contains}), flush=True)


if __name__ == "__main__":
    main()
