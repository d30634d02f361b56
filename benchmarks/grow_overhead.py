"""Issue 34's overhead target: what `ragbench grow` adds to the app's own ingest time. The real Open WebUI 0.12.4
(started as the test suite starts it, embedding through the hash-vector stand-in of grow_openwebui.py, so that the
app's own time is as short as it gets and ragbench's share as large) ingests the same N documents in rounds, each
round two ways, in turn, each into a fresh knowledge base:

- **plain**: a bare script sending exactly the client calls grow's Open WebUI target sends per document (upload
  processed in the foreground, its processing status, attach to the knowledge base), with the same 4 in flight;
  its wall time is the app's ingest time with no measurement around it.
- **grow**: `ragbench grow` over the same texts in two rungs (the first half, then the rest: the incremental path,
  which lists and re-checks the knowledge base's files at the second rung); the sum of its rungs' `ingest_seconds`
  (the target's whole prepare: configuration reads, knowledge-base lookup, listing, uploads) against plain's.

    PYTHONPATH=. .venv/bin/python benchmarks/grow_overhead.py [--docs 120] [--rounds 3] [--out reports/grow-overhead]

Prints each round's times and the overhead (grow ÷ plain − 1), then the median over the rounds and the mean over
an even number of them (the two orders alike); writes them as JSON. Rounds alternate the order: the arm that runs
second meets a larger store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.datasets import load_dataset
from bench.datasets.model import Document
from benchmarks.grow_openwebui import HashEmbedder
from tests.harness.beir import write_beir
from tests.harness.openwebui import OpenWebUIServer, start_openwebui
from tests.harness.process import stop_process

REPO = Path(__file__).resolve().parents[1]
CONCURRENCY = 4  # the Open WebUI target's default upload concurrency
ARMS = ["plain", "client", "grow"]


def documents(count: int) -> list[Document]:
    """The first `count` numpy-docs documents with text."""
    corpus = load_dataset(Path("builtin:numpy-docs")).corpus
    return [doc for doc in corpus.values() if doc.full_text.strip()][:count]


def write_ladder(root: Path, docs: list[Document]) -> tuple[Path, Path]:
    """The grow arm's inputs: the first half as the dataset (one query judging its first document), the rest as
    the distractors, in order: grow sends exactly `docs`."""
    half = len(docs) // 2
    rows = [{"_id": d.doc_id, "title": d.title, "text": d.text} for d in docs]
    own = write_beir(root / "own", rows[:half], {"q0": docs[0].title or "x"}, [("q0", docs[0].doc_id, 1)])
    rest = write_beir(root / "rest", rows[half:], {"q": "x"}, [("q", docs[half].doc_id, 1)])  # its qrels: ignored
    return own, rest


def plain(server: OpenWebUIServer, docs: list[Document], kb_name: str) -> list[float]:
    """The app's ingest of `docs` with grow's per-document calls and nothing else, in the same two halves as grow's
    rungs (one knowledge base); each half's wall seconds."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=600) as client:
        kb = client.post("/api/v1/knowledge/create", json={"name": kb_name, "description": ""}).json()["id"]

        def send(doc: Document) -> None:
            uploaded = client.post(
                "/api/v1/files/",
                params={"process": "true", "process_in_background": "false"},
                files={"file": (f"{doc.doc_id}.txt", doc.full_text.encode("utf-8"), "text/plain")},
                data={"metadata": json.dumps({"ragbench_doc_id": doc.doc_id})},
            )
            file_id = uploaded.json()["id"]
            status = client.get(f"/api/v1/files/{file_id}/process/status").json().get("status")
            assert status == "completed", status
            client.post(f"/api/v1/knowledge/{kb}/file/add", json={"file_id": file_id}).raise_for_status()

        halves = []
        for part in (docs[: len(docs) // 2], docs[len(docs) // 2 :]):
            start = time.perf_counter()
            with ThreadPoolExecutor(CONCURRENCY) as pool:
                list(pool.map(send, part))
            halves.append(time.perf_counter() - start)
        return halves


def client(server: OpenWebUIServer, docs: list[Document], kb_name: str) -> list[float]:
    """The same documents through ragbench's own HTTP client and upload function (bench.core.http, the Open WebUI
    target's `upload_to_knowledge` in its `parallel`), without the target around them; each half's wall seconds."""
    from bench.core.http import HttpClient
    from bench.targets.http_shared import parallel
    from bench.targets.openwebui_knowledge import knowledge_base, upload_to_knowledge

    http = HttpClient("Open WebUI", server.url, headers={"Authorization": f"Bearer {server.api_key}"}, timeout_s=600)
    try:
        kb = knowledge_base(http, kb_name, [])
        halves = []
        for part in (docs[: len(docs) // 2], docs[len(docs) // 2 :]):
            start = time.perf_counter()
            send = lambda d: upload_to_knowledge(http, kb, f"{d.doc_id}.txt", d.full_text, d.doc_id, lambda _: None)  # noqa: E731
            errors = [e for _, e in parallel(part, send, CONCURRENCY, lambda _: None) if e is not None]
            assert not errors, errors[:1]
            halves.append(time.perf_counter() - start)
        return halves
    finally:
        http.close()


def grow(server: OpenWebUIServer, inputs: tuple[Path, Path], count: int, kb_name: str, out: Path) -> dict[str, float]:
    """`ragbench grow` over the same documents in two rungs: its rungs' ingest seconds, and its whole wall time."""
    own, rest = inputs
    argv = [sys.executable, "-m", "bench", "grow", "--dataset", str(own), "--distractors", str(rest)]
    argv += ["--rungs", f"{count // 2},{count}", "-t", f"g=openwebui:vector@{server.url}?kb={kb_name}"]
    argv += ["--keep", "--out", str(out), "--overwrite"]
    env = {**os.environ, "OPENWEBUI_API_KEY": server.api_key, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"grow exit {done.returncode}: {done.stderr[-2000:]}")
    rungs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    seconds = [r["ingest_seconds"] for r in rungs if r.get("record") == "grow_rung"]
    assert [r["added"] for r in rungs if r.get("record") == "grow_rung"] == [count // 2, count - count // 2]
    return {"ingest_s": sum(seconds), "rung_ingest_s": seconds, "wall_s": wall}  # type: ignore[dict-item]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "grow-overhead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    docs = documents(args.docs)
    embedder = ThreadingHTTPServer(("127.0.0.1", 0), HashEmbedder)
    threading.Thread(target=embedder.serve_forever, daemon=True).start()
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inputs = write_ladder(root / "data", docs)
        embed_url = f"http://127.0.0.1:{embedder.server_address[1]}"
        webui, server = start_openwebui(root / "openwebui", args.out / "app.log", embed_url, "hash")
        try:
            plain(server, docs[:4], "warm-up")  # the app's first-call costs are no arm's
            for r in range(args.rounds):
                order = ARMS[r % len(ARMS) :] + ARMS[: r % len(ARMS)]  # each arm first in turn
                found: dict[str, object] = {"round": r + 1, "order": order, "load": os.getloadavg()[0]}
                for arm in order:
                    if arm == "plain":
                        found["plain_halves_s"] = halves = plain(server, docs, f"plain-{r}")
                        found["plain_s"] = sum(halves)
                    elif arm == "client":
                        found["client_halves_s"] = halves = client(server, docs, f"client-{r}")
                        found["client_s"] = sum(halves)
                    else:
                        found["grow"] = grow(server, inputs, len(docs), f"grow-{r}", root / f"grow-{r}")
                grown = found["grow"]["ingest_s"]  # type: ignore[index]
                found["overhead"] = grown / found["plain_s"] - 1  # type: ignore[operator]
                print(json.dumps(found), flush=True)
                rounds.append(found)
        finally:
            stop_process(webui)
            embedder.shutdown()
    overheads = [float(r["overhead"]) for r in rounds]  # type: ignore[arg-type]
    median = statistics.median(overheads)
    # each order as often (rounds alternate): the mean cancels the second arm's handicap (a larger store)
    balanced = statistics.mean(overheads[: len(overheads) // 2 * 2])
    print(
        f"overhead (grow ingest ÷ plain − 1) over {len(rounds)} rounds: median {median:+.1%}, "
        f"order-balanced mean {balanced:+.1%}",
        flush=True,
    )
    summary = {"docs": args.docs, "rounds": rounds, "median": median, "balanced_mean": balanced}
    (args.out / "overhead.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
