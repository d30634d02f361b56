"""Replay fidelity of `load --trace` on a real application's traffic: a trace recorded by `ragbench meter --record`
between a real Open WebUI 0.12.4 and an embedder while Open WebUI ingests SciFact documents and answers hybrid
queries, then replayed with `load --trace` against the same embedder. Prints the replay's comparison (per route
p50/p99 recorded vs replayed, texts per call, inter-arrival KS p); asserts nothing.

    PYTHONPATH=. .venv/bin/python benchmarks/trace_fidelity_openwebui.py [--docs 120] [--queries 200] [--depth 3]
        [--embedder infinity|gpu-like] [--service 40ms+0.05ms/token] [--pin] [--replay TRACE] --out DIR

`--embedder infinity` (the default): a real infinity-emb 0.0.78 serving MiniLM on this machine's CPU.
`--embedder gpu-like`: an embedder whose compute is not on this machine's CPU, as a TEI on a GPU: the loopback queue
server (tests/sizing/queue_server.py, its own process) serving OpenAI's /embeddings with feature-hashed vectors, one
call at a time in arrival order (one FIFO slot: calls queue as on one GPU), each taking `--service`: a fixed time a
call plus a time a token, tokens = the call's characters / 4. A call and its replay have the same characters, so the
same service time; only the queue, the meter's forwarding and the clients' timing can differ. After the recording
(or before a `--replay`) the script prints the trace's embedder busy share under that service time.

Environments: scripts/envs/infinity.sh and scripts/envs/openwebui.sh (under ~/.cache/ragbench/envs). The meter is
the real CLI in its own process (as a user runs it); Open WebUI's embedding base URL points at its `embedding`
route; the queries are `openwebui:hybrid` target searches (what `ragbench quality` sends), one at a time. The replay
cuts its synthetic texts from the same SciFact corpus (`--dataset`), so the texts' token density matches.

`--pin`: a dedicated embedder core. infinity runs under `taskset -c 1` with one torch / OpenMP thread; this script,
and so everything it starts after infinity (the meter, Open WebUI, the replay's `load` and its workers), runs on
core 0. The embedder then meets the same CPU while Open WebUI records as while the replay sends, where unpinned
it shared both cores with Open WebUI during the recording only. Other users' processes are not pinned: the script
prints the load average at each phase, and infinity's CPU time and run-queue wait before and after each.
`--replay TRACE`: no recording; that trace replayed again against a fresh embedder (how much two replays differ).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.datasets import load_dataset
from bench.datasets.sample import sample_dataset
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from benchmarks.runner import load_average
from tests.harness.models import EMBED_MODEL_NAME, INFINITY_ENV, infinity_argv, minilm_path
from tests.harness.openwebui import start_openwebui
from tests.harness.process import ManagedProcess, free_port, start_process, stop_process, wait_healthy
from tests.paths import scifact

APP_CORE, EMBEDDER_CORE = 0, 1  # --pin: Open WebUI, the meter and the replay client / infinity
REPO = Path(__file__).resolve().parents[1]
QUEUE_SERVER = REPO / "tests" / "sizing" / "queue_server.py"
SERVICE = re.compile(r"(\d+(?:\.\d+)?)ms\+(\d+(?:\.\d+)?)ms/token")
CHARACTERS_PER_TOKEN = 4  # as the queue server counts them


def parse_service(spec: str) -> tuple[float, float]:
    """`2ms+0.05ms/token` -> (2.0, 0.05): ms a call, ms a token."""
    match = SERVICE.fullmatch(spec.replace(" ", ""))
    if match is None:
        raise argparse.ArgumentTypeError(f"--service {spec!r}: expected like 40ms+0.05ms/token")
    return float(match[1]), float(match[2])


def start_gpu_like(logs: Path, service: tuple[float, float]) -> tuple[ManagedProcess, str]:
    port = free_port()
    argv = [sys.executable, str(QUEUE_SERVER), "--port", str(port)]
    argv += ["--service-ms", str(service[0]), "--per-token-ms", str(service[1])]
    proc = start_process("gpu-like embedder", argv, logs / "embedder.log")
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/metrics", deadline_s=60)
    return proc, url


def start_infinity(logs: Path, pin: bool) -> tuple[ManagedProcess, str]:
    port = free_port()
    argv = ["taskset", "-c", str(EMBEDDER_CORE)] if pin else []
    argv += infinity_argv(((minilm_path(), EMBED_MODEL_NAME),), port)
    env = dict(INFINITY_ENV)
    if pin:  # one core: more threads than that would only contend on it
        env |= {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = start_process("infinity-emb", argv, logs / "infinity.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/health", deadline_s=240)
    return proc, url


def start_meter(upstream: str, trace: Path, logs: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    argv = [sys.executable, "-m", "bench", "meter", "--port", str(port), "--upstream", f"embedding={upstream}"]
    with (logs / "meter.log").open("wb") as log:
        proc = subprocess.Popen([*argv, "--record", str(trace)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        if proc.poll() is not None:
            raise SystemExit(f"the meter exited: see {logs / 'meter.log'}")
        try:
            import httpx

            httpx.get(f"{url}/_meter/usage", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the meter did not start")


def record(openwebui_url: str, docs: int, queries: int, depth: int) -> tuple[int, int]:
    """Open WebUI ingests the documents, then answers the queries one at a time: (documents, queries)."""
    full = load_dataset(scifact(), split="train")
    sample = sample_dataset(full, max_queries=queries, max_docs=docs, seed=3)
    target = build_target(parse_target_spec(f"openwebui:hybrid@{openwebui_url}"), TargetOptions())
    try:
        target.prepare(sample, no_progress)
        asked = dict(list(sample.queries.items())[:queries])
        target.search(asked, depth, no_progress)
    finally:
        target.close()
    return len(sample.corpus), len(asked)


def embedder_cpu(pid: int) -> str:
    """The embedder's threads' CPU time and run-queue wait so far (/proc/PID/task/*/schedstat, ns): whether it did
    the same work, and met the same contention, in both phases."""
    cpu_ns = wait_ns = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        run, wait, _slices = (int(x) for x in (task / "schedstat").read_text().split())
        cpu_ns, wait_ns = cpu_ns + run, wait_ns + wait
    return f"embedder CPU {cpu_ns / 1e9:.1f} s, run-queue wait {wait_ns / 1e9:.1f} s"


def percentile_ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def busy_share(trace: Path, service: tuple[float, float]) -> str:
    """The gpu-like embedder's load in the trace: the recorded calls, at their recorded arrivals, each with its modelled
    service time, through one FIFO slot. Busy share = service time / the span from the first arrival to the last
    answer; the busiest 10 s; the model's own latencies (what a faithful replay measures, less the clients' time)."""
    calls = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    free_at, served, latencies = 0.0, [], []
    for call in calls:
        start = max(call["at"], free_at)
        free_at = start + (service[0] + service[1] * sum(call["lengths"]) / CHARACTERS_PER_TOKEN) / 1000
        served.append((start, free_at))
        latencies.append(free_at - call["at"])
    busy_by_second = [0.0] * (int(free_at) + 1)
    for start, end in served:  # each service spread over the 1 s bins it covers
        while start < end:
            step = min(end, int(start) + 1) - start
            busy_by_second[int(start)] += step
            start += step
    span = free_at - calls[0]["at"]
    peak = max(sum(busy_by_second[i : i + 10]) for i in range(len(busy_by_second))) / 10
    return (
        f"gpu-like embedder busy {sum(busy_by_second):.1f} s of {span:.1f} s ({sum(busy_by_second) / span:.1%}), "
        f"busiest 10 s {peak:.0%}; queue model p50 {percentile_ms(latencies, 0.5):.1f} ms, "
        f"p99 {percentile_ms(latencies, 0.99):.1f} ms"
    )


def record_through_openwebui(embedder_url: str, out: Path, args: argparse.Namespace) -> Path:
    """The meter in front of the embedder, Open WebUI behind it: ingest, then the queries; the trace's path."""
    trace = out / "trace.jsonl"
    meter, meter_url = start_meter(embedder_url, trace, out / "logs")
    try:
        webui, server = start_openwebui(
            out / "webui", out / "logs" / "openwebui.log", f"{meter_url}/embedding", EMBED_MODEL_NAME
        )
        os.environ["OPENWEBUI_API_KEY"] = server.api_key
        try:
            started = time.perf_counter()
            docs, asked = record(server.url, args.docs, args.queries, args.depth)
            print(
                f"recorded: {docs} documents ingested, {asked} hybrid queries, "
                f"{time.perf_counter() - started:.0f} s, load average {load_average()}",
                flush=True,
            )
        finally:
            stop_process(webui)
    finally:
        meter.send_signal(signal.SIGINT)
        meter.wait(30)
    return trace


def replay(embedder_url: str, trace: Path, out: Path) -> None:
    spec = f"inf=openai@{embedder_url}?model={EMBED_MODEL_NAME}"
    command = [sys.executable, "-m", "bench", "load", "-e", spec, "--trace", str(trace), "--route", "embedding=inf"]
    command += ["--dataset", str(scifact()), "--out", str(out / "replay")]
    subprocess.run(command, check=True)
    print(f"replayed, load average {load_average()}", flush=True)
    print(json.dumps(json.loads((out / "replay" / "trace-replay.json").read_text()), indent=1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--queries", type=int, default=200)
    # Open WebUI's hybrid search embeds its candidate chunks again per query (2 x depth asked): depth 3 keeps 200
    # queries to minutes on a busy 2-core machine (depth 10: ~12 s a query there).
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--embedder", choices=["infinity", "gpu-like"], default="infinity")
    parser.add_argument("--service", type=parse_service, default="40ms+0.05ms/token", help="gpu-like: a call's time")
    parser.add_argument("--pin", action="store_true", help="infinity alone on core 1, the rest on core 0")
    parser.add_argument("--replay", type=Path, help="replay this recorded trace again (a fresh embedder), no recording")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.pin and args.embedder != "infinity":
        parser.error("--pin pins infinity; the gpu-like embedder's service is a wait, not CPU work")
    out: Path = args.out
    shutil.rmtree(out, ignore_errors=True)
    (out / "logs").mkdir(parents=True)
    print(f"load average at start: {load_average()}", flush=True)
    gpu_like = args.embedder == "gpu-like"
    embedder, url = start_gpu_like(out / "logs", args.service) if gpu_like else start_infinity(out / "logs", args.pin)
    if args.pin:  # inherited by every process started from here on
        os.sched_setaffinity(0, {APP_CORE})
    try:
        print(f"{args.embedder} ready: {embedder_cpu(embedder.popen.pid)}", flush=True)
        trace = args.replay or record_through_openwebui(url, out, args)
        if gpu_like:
            print(busy_share(trace, args.service), flush=True)
        print(f"before the replay: {embedder_cpu(embedder.popen.pid)}, load average {load_average()}", flush=True)
        replay(url, trace, out)
        print(f"after the replay: {embedder_cpu(embedder.popen.pid)}", flush=True)
    finally:
        stop_process(embedder)


if __name__ == "__main__":
    main()
