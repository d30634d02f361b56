"""Where the CPU goes while `ragbench grow` ingests (issue 34's overhead): grow_overhead.py's setup (the real Open
WebUI 0.12.4, the hash-vector embedder in a process of its own), rounds of the plain arm and a grow run, the order
reversed every other round. For the plain arm, the client's CPU (this process) and the app's per round; for each
grow rung, over the rung's ingest window, the CPU of every thread of grow's process (from /proc/PID/task/*/stat,
sampled every 0.1 s from this process), the app's and the embedder's, and the time grow's process spent in
Python's cyclic garbage collector (a sitecustomize of this script's, in a temporary folder on grow's PYTHONPATH).

    PYTHONPATH=. .venv/bin/python benchmarks/grow_rung_cpu.py [--docs 120] [--rounds 4] [--out reports/grow-cpu]

The rung's window: its `ingest_seconds`, ending where grow printed the rung's line less its two queries' time
(the warm-up and the one timed query, each taken as the rung's p50): within a sample or two (0.1 s each).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.datasets.model import Document
from benchmarks.grow_overhead import CLOCK_TICKS, documents, plain, start_embedder, tree_cpu_s, write_ladder
from tests.harness.openwebui import OpenWebUIServer, start_openwebui
from tests.harness.process import stop_process

REPO = Path(__file__).resolve().parents[1]
GC_TIMER = """
import atexit, gc, json, os, time
_log, _events, _began = os.environ.get("GROW_GC_LOG"), [], [0.0]
def _timed(phase, info):
    if phase == "start":
        _began[0] = time.perf_counter()
    else:
        _events.append((_began[0], info["generation"], time.perf_counter() - _began[0]))
if _log:
    gc.callbacks.append(_timed)
    atexit.register(lambda: open(_log, "w").write(json.dumps(_events)))
"""

Sample = tuple[float, dict[str, float], float]  # (perf_counter, thread "tid:name" -> CPU s, app + embedder CPU s)


def thread_cpu_s(pid: int) -> dict[str, float]:
    """Each live thread of the process: "tid:name" -> its CPU seconds (utime + stime) so far."""
    found = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            raw = stat.read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[1].split()
        found[f"{stat.parent.name}:{raw[raw.index('(') + 1 : raw.rindex(')')]}"] = (
            int(fields[11]) + int(fields[12])
        ) / CLOCK_TICKS
    return found


class CpuWindow(TypedDict):
    """CPU seconds over a window: grow's process (each thread's too) and the app's with the embedder's."""

    client_cpu_s: float
    threads: dict[str, float]
    app_cpu_s: float


class RungCpu(CpuWindow):
    ingest_s: float
    gc_s: float  # seconds in grow's garbage collections inside the rung


class GrowCpu(TypedDict):
    rungs: list[RungCpu]
    grow_cpu_s: float
    gc_s: float


class PlainCpu(TypedDict):
    halves_s: list[float]
    client_cpu_s: float
    app_cpu_s: float


class CpuRound(TypedDict, total=False):
    """A round as rung_cpu.json keeps it: each arm once."""

    round: int
    load: float
    plain: PlainCpu
    grow: GrowCpu


def window(samples: list[Sample], start: float, end: float) -> CpuWindow:
    """CPU seconds over [start, end]: per thread of grow's process (a thread that ended inside the window counted
    to its last sample) and the app's with the embedder's."""
    inside = [s for s in samples if start - 0.1 <= s[0] <= end + 0.1] or [min(samples, key=lambda s: abs(s[0] - start))]
    first, per_thread = inside[0], {}
    for _, threads, _ in inside:
        for name, used in threads.items():
            per_thread[name] = used - first[1].get(name, 0.0)
    busy = {name: round(used, 2) for name, used in per_thread.items() if used > 0}
    return {
        "client_cpu_s": round(sum(busy.values()), 2),
        "threads": busy,
        "app_cpu_s": round(inside[-1][2] - first[2], 2),
    }


def grow_rungs(
    server: OpenWebUIServer, inputs: tuple[Path, Path], count: int, tag: str, app_pids: list[int]
) -> GrowCpu:
    """One grow run (two rungs), sampled; each rung's ingest time and CPU, and grow's whole CPU."""
    root = inputs[0].parent.parent
    (root / "site").mkdir(exist_ok=True)
    (root / "site" / "sitecustomize.py").write_text(GC_TIMER)
    argv = [sys.executable, "-m", "bench", "grow", "--dataset", str(inputs[0]), "--distractors", str(inputs[1])]
    argv += ["--rungs", f"{count // 2},{count}", "-t", f"g=openwebui:vector@{server.url}?kb=grow-{tag}"]
    argv += ["--keep", "--out", str(root / f"grow-{tag}"), "--overwrite"]
    gc_log = root / f"gc-{tag}.json"
    env = {**os.environ, "OPENWEBUI_API_KEY": server.api_key, "PYTHONPATH": f"{root / 'site'}:{REPO}"}
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        env={**env, "GROW_GC_LOG": str(gc_log)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    samples: list[Sample] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), thread_cpu_s(proc.pid), tree_cpu_s(app_pids)))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    assert proc.stdout is not None
    said = [time.perf_counter() for line in proc.stdout if line.startswith("rung ")]
    proc.wait()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"grow exit {proc.returncode}")
    records = [json.loads(line) for line in (root / f"grow-{tag}" / "results.jsonl").read_text().splitlines()]
    collections = json.loads(gc_log.read_text())
    rungs: list[RungCpu] = []
    for rung, printed in zip([r for r in records if r.get("record") == "grow_rung"], said):
        end = printed - 2 * rung["latency_ms"]["p50"] / 1000
        start = end - rung["ingest_seconds"]
        gc_s = sum(seconds for began, _, seconds in collections if start <= began <= end)
        rungs.append(RungCpu(ingest_s=rung["ingest_seconds"], **window(samples, start, end), gc_s=round(gc_s, 3)))
    return {
        "rungs": rungs,
        "grow_cpu_s": round(sum(samples[-1][1].values()), 2),
        "gc_s": sum(e[2] for e in collections),
    }


def plain_cpu(server: OpenWebUIServer, docs: list[Document], tag: str, app_pids: list[int]) -> PlainCpu:
    client, app = time.process_time(), tree_cpu_s(app_pids)
    halves = plain(server, docs, f"plain-{tag}")
    return {"halves_s": halves, "client_cpu_s": time.process_time() - client, "app_cpu_s": tree_cpu_s(app_pids) - app}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "grow-cpu")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    docs = documents(args.docs)
    embedder, embed_url = start_embedder()
    rounds: list[CpuRound] = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = write_ladder(Path(tmp) / "data", docs)
        try:
            webui, server = start_openwebui(Path(tmp) / "openwebui", args.out / "app.log", embed_url, "hash")
        except BaseException:
            embedder.kill()
            raise
        try:
            plain(server, docs[:4], "warm-up")
            app_pids = [webui.pid, embedder.pid]
            for r in range(args.rounds):
                found = CpuRound(round=r + 1, load=os.getloadavg()[0])
                for arm in ("plain", "grow") if r % 2 == 0 else ("grow", "plain"):
                    if arm == "plain":
                        found["plain"] = plain_cpu(server, docs, str(r), app_pids)
                    else:
                        found["grow"] = grow_rungs(server, inputs, len(docs), str(r), app_pids)
                print(json.dumps(found), flush=True)
                rounds.append(found)
        finally:
            stop_process(webui)
            embedder.kill()
            embedder.wait()
    (args.out / "rung_cpu.json").write_text(json.dumps(rounds))


if __name__ == "__main__":
    main()
