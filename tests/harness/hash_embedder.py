"""The hash-vector embedding stand-in the grow benchmarks serve (benchmarks/grow_openwebui.py, grow_lightrag.py,
grow_overhead.py; tests/sizing/queue_server.py's OpenAI route embeds with it too), the resident memory of an
app's process group, and the watch those ladders keep on a `ragbench grow` process.

The stand-in answers any POST in OpenAI's embeddings shape: each text as DIMS feature-hashed word counts (crc32),
L2-normalised — lexical, deterministic, microseconds a text, so that an app's ingest and latency are the app's and
its store's, not a CPU model's. Its quality figures are a bag of hashed words', not a retriever's.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import time
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path

DIMS = 128
WORD = re.compile(r"\w+")


def hash_vector(text: str) -> list[float]:
    vector = [0.0] * DIMS
    for word in WORD.findall(text.lower()):
        vector[zlib.crc32(word.encode()) % DIMS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:  # no word (punctuation, symbols): a unit vector, since a store that normalises would divide by 0
        return [1.0] + [0.0] * (DIMS - 1)
    return [v / norm for v in vector]


class HashEmbedder(BaseHTTPRequestHandler):
    """Serve with `ThreadingHTTPServer(("127.0.0.1", 0), HashEmbedder)`; its root URL is the OpenAI base URL."""

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": hash_vector(t)} for i, t in enumerate(texts)]
        reply = json.dumps({"object": "list", "data": data, "model": body.get("model", "hash")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def tree_rss_kib(pgid: int) -> int:
    """Resident memory of every process in the app's process group (its workers included), KiB."""
    total = 0
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE") // 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


def tree_pss_kib(root: int) -> int:
    """Proportional set size of a process and all its descendants, KiB: memory shared between them (PostgreSQL's
    shared buffers, mapped by every backend) counted once, where summed RSS would count it per process. By parent,
    not process group: PostgreSQL's children each start a session of their own."""
    parents: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(status.parent.name)] = int(status.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree, grew = tree | more, bool(more)
    total = 0
    for pid in tree:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            total += int(next(line.split()[1] for line in rollup.splitlines() if line.startswith("Pss:")))
        except (OSError, IndexError, ValueError, StopIteration):
            continue
    return total


def watch_grow(
    proc: subprocess.Popen[bytes],
    app_pgid: int,
    samples: Path,
    limit_s: float,
    max_rss_gib: float,
    store_pgid: int | None = None,
) -> int:
    """Sample the app's RSS (and the PSS of a store server's process tree: `store_pgid`, e.g. PostgreSQL's
    postmaster) and the load average every 5 s into `samples` (CSV) until `proc` (a `ragbench grow`) ends; stop it
    past `limit_s` seconds or `max_rss_gib` of app memory. Returns the peak RSS, KiB."""
    started, peak_kib, store_peak = time.monotonic(), 0, 0
    with samples.open("w") as out:
        out.write("unix_s,app_rss_kib,load1,store_pss_kib\n")
        try:
            while proc.poll() is None:
                time.sleep(5)
                rss, load = tree_rss_kib(app_pgid), os.getloadavg()[0]
                store = tree_pss_kib(store_pgid) if store_pgid else 0
                peak_kib, store_peak = max(peak_kib, rss), max(store_peak, store)
                out.write(f"{time.time():.0f},{rss},{load:.2f},{store}\n")
                out.flush()
                if time.monotonic() - started > limit_s or rss > max_rss_gib * 2**20:
                    print(
                        f"stopping grow: {time.monotonic() - started:.0f} s, app RSS {rss / 2**20:.2f} GiB", flush=True
                    )
                    proc.terminate()
                    proc.wait()
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
    print(f"grow exit {proc.returncode} after {time.monotonic() - started:.0f} s", flush=True)
    print(f"peak app RSS {peak_kib / 1024:.0f} MiB, peak store PSS {store_peak / 1024:.0f} MiB", flush=True)
    return peak_kib
