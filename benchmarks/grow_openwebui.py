"""Issue 34's large ladder on the real Open WebUI 0.12.4: `ragbench grow` through one knowledge base per mode
(vector, hybrid), the app embedding through a hash-vector stand-in served here (so that ingest and latency are the
app's and its vector store's, not a CPU model's), with small chunks so that tens of thousands of chunks take
minutes, not hours. Prints the command, then the chunks each knowledge base holds and the app's memory.

    PYTHONPATH=. .venv/bin/python benchmarks/grow_openwebui.py [--rungs 750,1.2k,2k,3k] [--chunk-size 50]
        [--queries 20] [--modes vector,hybrid] [--max-chunks K] [--limit-s 2400] [--out reports/grow-openwebui]
        [--meter-port P [--unit chunks]]

With --store pgvector-halfvec-hnsw, Open WebUI keeps its vectors in a PostgreSQL 18 + pgvector 0.8.2 the script
starts (tests/harness/pgvector.py; halfvec under HNSW, vectors of the stand-in's 128 dimensions): grow's data_dir=
is PostgreSQL's data folder, the store's memory (PSS of its processes) is sampled beside the app's RSS, and every
target names its store (`store=`), so that compare and history never pair the two ladders. Default: chroma.
Each knowledge base's index recall@10 is measured at every rung (`OUT.recall.csv`): pgvector's in PostgreSQL
(pgvector_recall.RungRecall), Chroma's on a copy of the app's vector_db/ taken with the app stopped for the copy
(store_recall_chroma.measure_copy), at ef_search 10, 40, 100 (Chroma's default) and 200. Milvus Lite's is measured
live by benchmarks/milvus_lite_ops.py (a copy of its files lacks the rows its WAL still buffers).
With --store milvus-lite-hnsw, Open WebUI keeps them in Milvus Lite 3.2.2 (tests/harness/milvus.py), which runs
inside the app's own process (its memory is the app's, its bytes `vector_db/milvus.db/`).
--milvus-memtable-mib M sets Milvus Lite's MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES: below it (default 128 MiB) a
collection's rows are searched by brute force in Python and no HNSW index is used (docs/grow.md).

With --cleanup, grow deletes what it uploaded (its own cleanup, no --keep), and the script says what the store still
holds afterwards (Chroma's collections and vectors, PostgreSQL's rows) and the app's memory then.

With --meter-port, Open WebUI embeds through grow's meter (`--meter-upstream embedding=` the stand-in, on port P):
each rung's embedding calls are recorded, and `--unit chunks` counts the rungs in Open WebUI's chunks.

`grow` is stopped with SIGTERM after --limit-s (its finished rungs and answers are kept: exit 143).
The stand-in embeds a text as 128 feature-hashed word counts (crc32), L2-normalised: lexical, deterministic, fast.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # pgvector_recall beside this file

from pgvector_recall import RungRecall
from store_recall import RungRecall as StoreRungRecall
from store_recall_chroma import measure_copy

from tests.harness.hash_embedder import DIMS, HashEmbedder, tree_pss_kib, tree_rss_kib, watch_grow
from tests.harness.milvus import milvus_store, prepare_data_dir
from tests.harness.milvus import openwebui_extra as milvus_extra
from tests.harness.openwebui import OpenWebUIServer, admin_client, pgvector_store, start_openwebui
from tests.harness.openwebui import env_dir as openwebui_env_dir
from tests.harness.pgvector import PostgresServer, openwebui_extra, start_postgres, stop_postgres
from tests.harness.process import ManagedProcess, free_port, start_process, stop_process, wait_healthy

REPO = Path(__file__).resolve().parents[1]
PGVECTOR = "pgvector-halfvec-hnsw"
MILVUS = "milvus-lite-hnsw"  # Milvus Lite 3.2.2 inside the app (tests/harness/milvus.py), Open WebUI's HNSW


def start_reranker(log: Path) -> tuple[ManagedProcess, str]:
    """infinity-emb 0.0.78 serving the test suite's stand-in cross-encoder (tests/harness/models.py: MiniLM with a
    seeded one-label head: real model cost per pair, scores that mean nothing for quality) on CPU, as the test
    fixtures start it; its root URL."""
    from tests.harness.models import INFINITY_ENV, RERANK_MODEL_NAME, infinity_argv, reranker_standin_path

    port = free_port()
    argv = infinity_argv(((reranker_standin_path(), RERANK_MODEL_NAME),), port)
    proc = start_process("infinity-emb", argv, log, env=INFINITY_ENV)
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", deadline_s=300)
    except BaseException:
        stop_process(proc)
        raise
    return proc, f"http://127.0.0.1:{port}"


def chunks_per_collection(data_dir: Path) -> dict[str, int]:
    db = sqlite3.connect(data_dir / "vector_db" / "chroma.sqlite3")
    rows = db.execute(
        "SELECT c.name, COUNT(*) FROM embeddings e JOIN segments s ON e.segment_id = s.id "
        "JOIN collections c ON s.collection = c.id GROUP BY c.name"
    ).fetchall()
    return {str(name): int(n) for name, n in rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rungs", default="750,1.2k,2k,3k")
    parser.add_argument("--chunk-size", type=int, default=50)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--max-chunks", type=int, default=0, help="chunks asked per query (0: the target's default)")
    parser.add_argument("--modes", default="vector,hybrid", help="Open WebUI modes, one knowledge base each")
    parser.add_argument("--limit-s", type=int, default=2400)
    parser.add_argument("--max-rss-gib", type=float, default=10.0)
    parser.add_argument("--chroma-cache-gib", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "grow-openwebui")
    parser.add_argument("--meter-port", type=int, default=0, help="embed through grow's meter on this port")
    parser.add_argument("--unit", default="docs", help="docs, or chunks (with --meter-port)")
    parser.add_argument("--reranker", action="store_true", help="serve the stand-in cross-encoder for mode rerank")
    parser.add_argument(
        "--cleanup", action="store_true", help="grow deletes what it uploaded (no --keep): then say what the store kept"
    )
    parser.add_argument(
        "--milvus-memtable-mib",
        type=float,
        default=0,
        help="Milvus Lite flushes a collection's rows to HNSW-indexed segments past this (its default 128 MiB)",
    )
    parser.add_argument(
        "--store", default="chroma", choices=("chroma", PGVECTOR, MILVUS), help="Open WebUI's vector store"
    )
    args = parser.parse_args()
    os.environ.update(CHUNK_SIZE=str(args.chunk_size), CHUNK_OVERLAP="0")
    # Chroma keeps every collection it opened in memory (Open WebUI makes one per file beside the knowledge base's):
    # ~3.5 MB per 20-chunk document here, unbounded. Its LRU segment cache bounds that (chromadb's own settings).
    os.environ.update(CHROMA_SEGMENT_CACHE_POLICY="LRU", CHROMA_MEMORY_LIMIT_BYTES=str(args.chroma_cache_gib * 2**30))
    if args.milvus_memtable_mib:  # below it Milvus Lite searches a collection by brute force, in Python (docs/grow.md)
        os.environ["MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES"] = str(int(args.milvus_memtable_mib * 2**20))
    embedder = ThreadingHTTPServer(("127.0.0.1", 0), HashEmbedder)
    threading.Thread(target=embedder.serve_forever, daemon=True).start()
    embed_url = f"http://127.0.0.1:{embedder.server_address[1]}"
    args.upstream = embed_url
    if args.meter_port:  # the app's embedding calls pass grow's meter, which forwards them to the stand-in
        embed_url = f"http://127.0.0.1:{args.meter_port}/embedding"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the app (finally) when stopped
    reranker, args.reranker_url = start_reranker(args.out.with_suffix(".infinity.log")) if args.reranker else (None, "")
    try:
        with_app(args, embed_url)
    finally:
        if reranker is not None:
            stop_process(reranker)
        embedder.shutdown()


def with_app(args: argparse.Namespace, embed_url: str) -> None:
    postgres: tuple[ManagedProcess, PostgresServer] | None = None
    if args.store == PGVECTOR:
        postgres = start_postgres(args.out.with_suffix(".postgres.log"))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            with_store(args, embed_url, Path(tmp), postgres)
    finally:
        if postgres is not None:
            stop_postgres(*postgres)


def with_store(
    args: argparse.Namespace, embed_url: str, root: Path, postgres: tuple[ManagedProcess, PostgresServer] | None
) -> None:
    store_env = pgvector_store(postgres[1].url, openwebui_extra(), DIMS) if postgres else None
    if args.store == MILVUS:
        store_env = milvus_store()
        prepare_data_dir(root / "openwebui")
    log = args.out.with_suffix(".app.log")
    webui, server = start_openwebui(root / "openwebui", log, embed_url, "hash", store_env)
    try:
        store_dir = postgres[1].data_dir if postgres else server.data_dir / "vector_db"
        recall = None if args.cleanup else rung_recall(args, server, postgres[1] if postgres else None, webui.popen.pid)
        try:
            run_grow(args, server, webui.popen.pid, store_dir, postgres[0].pid if postgres else None)
        finally:
            if recall is not None:
                recall.done.set()
                recall.join()
        print(f"{'after cleanup' if args.cleanup else 'kept'}: app RSS {tree_rss_kib(webui.popen.pid) / 1024:.0f} MiB")
        if postgres:
            counts = postgres[1].sql("select count(distinct collection_name), count(*) from document_chunk")
            print("collections|chunks in PostgreSQL:", counts, flush=True)
            print(f"postgres PSS now: {tree_pss_kib(postgres[0].pid) / 1024:.0f} MiB", flush=True)
            if not args.cleanup:
                say_recall(postgres[1], args.queries)
        elif args.store == "chroma":
            counts = chunks_per_collection(server.data_dir)
            print(f"collections|chunks in Chroma: {len(counts)}|{sum(counts.values())}", flush=True)
        files = store_dir.rglob("*")
        print("store bytes:", sum(f.stat().st_size for f in files if f.is_file()), flush=True)
    finally:
        stop_process(webui)
    if args.store == MILVUS:  # Milvus Lite's file is the app's while it runs: read once the app has stopped
        print("collections|chunks in Milvus Lite:", milvus_counts(server.data_dir), flush=True)


def milvus_counts(openwebui_data: Path) -> str:
    """Collections and rows in Open WebUI's Milvus Lite file (pymilvus with Open WebUI's own interpreter)."""
    code = (  # per-file collections (`open_webui_file_…`) apart from the others (knowledge bases)
        "import sys; from pymilvus import MilvusClient; c = MilvusClient(sys.argv[1]); names = c.list_collections(); "
        "rows = {n: int(c.get_collection_stats(n)['row_count']) for n in names}; "
        "files = [n for n in names if n.startswith('open_webui_file_')]; "
        'print(f"{len(names)}|{sum(rows.values())} (per-file: {len(files)}|{sum(rows[n] for n in files)}; "'
        'f"others: {sorted((n, rows[n]) for n in names if n not in files)})")'
    )
    env = {**os.environ, "PYTHONPATH": str(milvus_extra())}
    env.pop("MILVUS_URI", None)
    python = str(openwebui_env_dir() / "bin" / "python")
    done = subprocess.run(
        [python, "-c", code, str(openwebui_data / "vector_db" / "milvus.db")], env=env, capture_output=True, text=True
    )
    return done.stdout.strip() or done.stderr.strip()[-300:]


def rung_recall(
    args: argparse.Namespace, server: OpenWebUIServer, pg: PostgresServer | None, app_pgid: int
) -> StoreRungRecall | None:
    """Index recall@10 of each knowledge base at every rung, beside the ladder: pgvector's in PostgreSQL
    (pgvector_recall.RungRecall), Chroma's on a copy of the app's vector_db/ (store_recall_chroma); none for Milvus
    Lite (a copy lacks rows its WAL still buffers: benchmarks/milvus_lite_ops.py measures it live)."""
    from bench.datasets import load_dataset

    def base_of(target: str) -> str:  # the target `MODE-STORE` grows the knowledge base `grow-MODE`
        with admin_client(server) as client:
            listing = client.get("/api/v1/knowledge/").json()
        items = listing["items"] if isinstance(listing, dict) else listing
        return next(str(kb["id"]) for kb in items if kb["name"] == f"grow-{target.split('-')[0]}")

    texts = list(load_dataset("builtin:numpy-docs").queries.values())[:20]
    results, out = args.out / "results.jsonl", args.out.with_suffix(".recall.csv")
    if pg is not None:
        watcher: StoreRungRecall = RungRecall(pg, results, base_of, texts, out)
    elif args.store == "chroma":  # Open WebUI names a knowledge base's Chroma collection by its id
        vector_db = server.data_dir / "vector_db"
        watcher = StoreRungRecall(results, lambda t: measure_copy(app_pgid, vector_db, base_of(t), texts), out)
    else:
        return None
    watcher.start()
    return watcher


def say_recall(pg: PostgresServer, queries: int) -> None:
    """Recall@10 and @100 of pgvector's HNSW index on each knowledge base at the top rung (pgvector_recall.py)."""
    from pgvector_recall import index_recall

    from bench.datasets import load_dataset

    texts = list(load_dataset("builtin:numpy-docs").queries.values())[: max(queries, 20)]
    for k in (10, 100):  # 100: past hnsw.ef_search (40), where a scan without iteration comes back short
        for r in index_recall(pg, texts, k):
            print(f"recall@{k} {r.recall:.3f} ({r.short} short of {k}) {r.rows:,} rows, {r.setting}; plan: {r.plan}")


def run_grow(
    args: argparse.Namespace, server: OpenWebUIServer, app_pgid: int, store_dir: Path, store_pgid: int | None
) -> None:
    url = server.url
    argv = [sys.executable, "-m", "bench", "grow", "--dataset", "builtin:numpy-docs", "--rungs", args.rungs]
    argv += ["--queries", str(args.queries), "--slo", "p99=2s", "--out", str(args.out), "--overwrite"]
    argv += [] if args.cleanup else ["--keep"]
    argv += ["--unit", args.unit]
    rerank_url = f"{args.reranker_url}/rerank"
    if args.meter_port:
        argv += ["--meter-upstream", f"embedding={args.upstream}", "--meter-port", str(args.meter_port)]
        if args.reranker_url:  # the reranker's calls pass the meter too, on its route `rerank`
            argv += ["--meter-upstream", f"rerank={args.reranker_url}"]
            rerank_url = f"http://127.0.0.1:{args.meter_port}/rerank/rerank"
    for mode in args.modes.split(","):
        # Named with the store: grow's records keep a target's name only, and a name is what pairs ladders.
        spec = f"{mode}-{args.store}=openwebui:{mode}@{url}?kb=grow-{mode}&data_dir={store_dir}&store={args.store}"
        if mode == "rerank":
            spec += f"&reranker_url={rerank_url}&reranker_model=minilm-reranker-standin"
        argv += ["-t", spec + (f"&max_chunks={args.max_chunks}" if args.max_chunks else "")]
    print("ragbench", " ".join(argv[3:]).replace(url, "URL").replace(str(store_dir), "DATA"), flush=True)
    env = {**os.environ, "OPENWEBUI_API_KEY": server.api_key, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(argv, cwd=REPO, env=env)
    watch_grow(proc, app_pgid, args.out.with_suffix(".rss.csv"), args.limit_s, args.max_rss_gib, store_pgid)


if __name__ == "__main__":
    main()
