"""Issue 34's ladder on the real LightRAG 1.5.7: `ragbench grow` through one LightRAG server (its documents are the
knowledge base every mode queries), its LLM the test suite's deterministic double (tests/harness/llm_double.py: entity
extraction answered in microseconds) and its embedder the hash-vector stand-in (tests/harness/hash_embedder.py), both
served here, so that ingest and latency are LightRAG's own pipeline and stores, not a model's. Prints the command,
grow's console (its rungs and answers), then a table of the rungs, the double's calls by kind, the app's memory and
store, and the load average during the run.

    PYTHONPATH=. .venv/bin/python benchmarks/grow_lightrag.py [--rungs 25,50,100,200,400,800,1.6k] [--queries 20]
        [--modes naive,local,global,hybrid,mix] [--slo p99=2s] [--limit-s 1500] [--out reports/grow-lightrag]

LightRAG is started as the tests start it (tests/harness/lightrag.py: loopback, a fresh working folder, here
OUT/lightrag, MAX_GLEANING=0, its other settings its defaults); grow writes to OUT/grow. One server for all modes:
the first mode's target inserts each rung's documents and the others find them there (their ingest is the listing
alone). `grow` runs with --keep (deleting hundreds of documents from LightRAG rebuilds its graph, a cost of no rung)
and is stopped with SIGTERM after --limit-s or above --max-rss-gib (its finished rungs and answers are kept: exit
143); the server is stopped and its folder deleted at the end (--keep-store keeps it), on Ctrl-C and SIGTERM too.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.hash_embedder import DIMS, HashEmbedder, watch_grow
from tests.harness.lightrag import VERSION, LightRAGServer, Providers, start_lightrag
from tests.harness.llm_double import LLMDouble
from tests.harness.process import stop_process

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rungs", default="25,50,100,200,400,800,1.6k")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--modes", default="naive,local,global,hybrid,mix", help="LightRAG modes, one target each")
    parser.add_argument("--slo", default="p99=2s")
    parser.add_argument("--limit-s", type=int, default=1500, help="grow is stopped (SIGTERM) after this")
    parser.add_argument("--max-rss-gib", type=float, default=8.0)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "grow-lightrag")
    parser.add_argument("--keep-store", action="store_true", help="keep LightRAG's working folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    embedder = ThreadingHTTPServer(("127.0.0.1", 0), HashEmbedder)
    threading.Thread(target=embedder.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the app (finally) when stopped
    try:
        with LLMDouble() as llm:
            providers = Providers(
                llm.base_url, llm.model, f"http://127.0.0.1:{embedder.server_address[1]}", "hash", DIMS
            )
            with_app(args, providers, llm)
    finally:
        embedder.shutdown()


def with_app(args: argparse.Namespace, providers: Providers, llm: LLMDouble) -> None:
    work_dir = args.out / "lightrag"
    if work_dir.exists():  # this script's own folder from an earlier run: a fresh server starts empty
        shutil.rmtree(work_dir)
    proc, server = start_lightrag(work_dir, args.out / "lightrag.log", providers)
    try:
        print(f"LightRAG {VERSION} at {server.url}, working folder {work_dir}", flush=True)
        run_grow(args, server, proc.popen.pid)
        print("LightRAG's documents by status at the end:", status_counts(server), flush=True)
        print_rungs(args.out / "grow" / "results.jsonl")
        print("LLM double calls by kind:", dict(collections.Counter(c.kind for c in llm.calls)), flush=True)
        files = [f for f in (work_dir / "rag_storage").rglob("*") if f.is_file()]
        print(f"rag_storage: {sum(f.stat().st_size for f in files):,} bytes in {len(files)} files", flush=True)
    finally:
        stop_process(proc)
        if not args.keep_store:
            shutil.rmtree(work_dir, ignore_errors=True)


def grow_argv(args: argparse.Namespace, server: LightRAGServer) -> list[str]:
    argv = [sys.executable, "-m", "bench", "grow", "--dataset", "builtin:numpy-docs", "--rungs", args.rungs]
    argv += ["--queries", str(args.queries), "--slo", args.slo, "--keep", "--out", str(args.out / "grow")]
    argv += ["--overwrite"]
    store = server.work_dir / "rag_storage"
    for mode in args.modes.split(","):
        argv += ["-t", f"{mode}=lightrag:{mode}@{server.url}?data_dir={store}&timeout={args.limit_s}"]
    return argv


def run_grow(args: argparse.Namespace, server: LightRAGServer, app_pgid: int) -> None:
    """grow in a process of its own, sampled every 5 s (the app's RSS, the load average) and stopped past the limits."""
    argv = grow_argv(args, server)
    print("ragbench", " ".join(argv[3:]).replace(server.url, "URL").replace(str(server.work_dir), "WORK"), flush=True)
    env = {**os.environ, "LIGHTRAG_API_KEY": server.api_key, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(argv, cwd=REPO, env=env)
    samples = args.out / "samples.csv"
    peak_kib = watch_grow(proc, app_pgid, samples, args.limit_s, args.max_rss_gib)
    loads = [float(row.split(",")[2]) for row in samples.read_text().splitlines()[1:]]
    if loads:
        print(f"load average (1 min) during the run: {min(loads):.1f} to {max(loads):.1f}", flush=True)
    print(f"app RSS peak {peak_kib / 2**20:.2f} GiB", flush=True)


def status_counts(server: LightRAGServer) -> object:
    """LightRAG's documents by status: how far a rung stopped by the limit had got."""
    reply = httpx.get(f"{server.url}/documents/status_counts", headers={"X-API-Key": server.api_key}, timeout=60)
    return reply.json().get("status_counts") if reply.is_success else f"HTTP {reply.status_code}"


def print_rungs(results: Path) -> None:
    """One markdown row per rung and mode: what docs/grow.md's table holds. Only the first mode's target sends the
    documents; the others find them listed and have no ingest rate (docs/s null, "-")."""
    if not results.exists():
        print("no results written", flush=True)
        return
    records = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    print(
        "| mode | size (docs) | chunks | added | ingest s | docs/s | chunks/s | p50 ms | p99 ms | nDCG@10 | R@100 "
        "| errors | RSS MiB | store MiB |"
    )
    print("|" + "---|" * 14)
    chunks_before: dict[str, int] = {}
    for r in (r for r in records if r.get("record") == "grow_rung"):
        chunks = r.get("chunks")
        new_chunks = chunks - chunks_before.get(r["target"], 0) if isinstance(chunks, int) else None
        chunks_before[r["target"]] = chunks if isinstance(chunks, int) else 0
        rated = r["docs_per_s"] is not None
        per_s = f"{new_chunks / r['ingest_seconds']:.2f}" if new_chunks is not None and rated else "-"
        lat, met = r["latency_ms"], r["metrics"]
        errors = ", ".join(f"{k} {n}: {r['error_examples'].get(k, '')[:80]}" for k, n in r["errors"].items())
        cells = [r["target"], f"{r['size']:,}", f"{chunks:,}" if isinstance(chunks, int) else "-", str(r["added"])]
        cells += [f"{r['ingest_seconds']:.1f}", f"{r['docs_per_s']:.2f}" if rated else "-", per_s]
        cells += [f"{lat.get('p50', 0):,.0f}", f"{lat.get('p99', 0):,.0f}"]
        cells += [f"{met.get('nDCG@10', 0):.3f}", f"{met.get('R@100', 0):.3f}", errors or r.get("error") or "-"]
        cells += [mib(r.get("app_rss_bytes")), mib(r.get("store_bytes"))]
        print("| " + " | ".join(cells) + " |", flush=True)
    for r in (r for r in records if r.get("record") == "grow"):
        print(r["answer"], flush=True)


def mib(value: object) -> str:
    return f"{value / 2**20:,.1f}" if isinstance(value, int) else "-"


if __name__ == "__main__":
    main()
