"""Issue 34's overhead target: what `ragbench grow` adds to the app's own ingest time. The real Open WebUI 0.12.4
(started as the test suite starts it, embedding through the hash-vector stand-in of tests/harness/hash_embedder.py,
served by a process of its own, so that the app's own time is as short as it gets and ragbench's share as large)
ingests the same N documents in rounds, each round every arm once, each into a fresh knowledge base:

- **plain**: a bare script sending exactly the client calls grow's Open WebUI target sends per document (upload
  processed in the foreground, its processing status, attach to the knowledge base), with the same 4 in flight;
  its wall time is the app's ingest time with no measurement around it.
- **client** (with `--arms plain,client,grow`): the same through ragbench's own HTTP client and upload function.
- **grow**: `ragbench grow` over the same texts in two rungs (the first half, then the rest: the incremental path,
  which lists the knowledge base's files at the second rung); the sum of its rungs' `ingest_seconds` (the
  target's whole prepare: configuration reads, knowledge-base lookup, listing, uploads) against plain's.

    PYTHONPATH=. .venv/bin/python benchmarks/grow_overhead.py [--docs 120] [--rounds 8] [--arms plain,grow] [--pin]
        [--out reports/grow-overhead]

The order of the arms is reversed every other round (plain grow, grow plain, ...), so that a drift of the shared
machine's load and the larger store the second arm meets fall on both arms alike over each pair of rounds.
`--pin`: the app and the embedder on CPU 0, this script's client threads and grow's process on CPU 1, the same in
every arm. Prints each round's times and the overhead (grow ÷ plain − 1), then the median over the rounds, its
quartiles and range, the mean over whole pairs of rounds, and the paired estimate with its exact 95% signed-rank
interval (as `load --interleave` pairs its rounds: the target is shown met when the interval's top is within
+10%); writes them as JSON. `--summarise FILE...`: the same figures over the rounds of earlier runs' JSON.

Each arm's CPU seconds are recorded beside its time (utime + stime): the client's (this script's process for
plain and client, grow's whole subprocess, its start-up included, for grow) and the app's (Open WebUI's process
tree and the embedder, from /proc). The same app CPU in a longer wall time is the app waiting for a core, not
doing more work; a client that burns CPU shows in its own column.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.datasets import load_dataset
from bench.datasets.model import Document
from bench.gate import paired
from tests.harness.beir import write_beir
from tests.harness.openwebui import OpenWebUIServer, start_openwebui
from tests.harness.process import stop_process

REPO = Path(__file__).resolve().parents[1]
CONCURRENCY = 4  # the Open WebUI target's default upload concurrency
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_s(root_pids: list[int]) -> float:
    """CPU seconds (utime + stime) the processes and their descendants have used so far (/proc, one scan)."""
    parents, used = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.parent.name)
        parents[pid], used[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    tree, grew = set(root_pids), True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree, grew = tree | more, bool(more)
    return sum(used.get(pid, 0.0) for pid in tree)


def client_cpu_s() -> float:
    """This process's CPU seconds and its waited-for children's (grow's subprocess, once it has exited)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


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


class GrowArm(TypedDict):
    """grow's arm in a round: its rungs' ingest seconds (whole and each), their upload loops alone, its wall time."""

    ingest_s: float
    rung_ingest_s: list[float]
    app_ingest_s: float
    wall_s: float


def grow(server: OpenWebUIServer, inputs: tuple[Path, Path], count: int, kb_name: str, out: Path) -> GrowArm:
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
    # the rungs' upload loops alone: the rest of `ingest_s` is what the target does around them, in the same run
    app = sum(r["app_ingest_seconds"] for r in rungs if r.get("record") == "grow_rung")
    return {"ingest_s": sum(seconds), "rung_ingest_s": seconds, "app_ingest_s": app, "wall_s": wall}


EMBEDDER = """
import sys
from http.server import ThreadingHTTPServer
sys.path.insert(0, sys.argv[1])
from tests.harness.hash_embedder import HashEmbedder
server = ThreadingHTTPServer(("127.0.0.1", 0), HashEmbedder)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def start_embedder() -> tuple[subprocess.Popen[str], str]:
    """The hash-vector stand-in in a process of its own: in this script's process it would share the GIL with the
    plain arm's client threads (and not with grow's, a subprocess), slowing one arm only."""
    proc = subprocess.Popen([sys.executable, "-c", EMBEDDER, str(REPO)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    if not port.isdigit():
        proc.kill()
        raise SystemExit("the hash-vector embedder did not start")
    return proc, f"http://127.0.0.1:{port}"


def run_arm(
    arm: str, server: OpenWebUIServer, docs: list[Document], inputs: tuple[Path, Path], tag: str
) -> list[float] | GrowArm:
    if arm == "plain":
        return plain(server, docs, f"plain-{tag}")
    if arm == "client":
        return client(server, docs, f"client-{tag}")
    return grow(server, inputs, len(docs), f"grow-{tag}", inputs[0].parent.parent / f"grow-{tag}")


@dataclass
class Arm:
    """One arm in one round: the client's and the app's CPU seconds, and the two halves' seconds (plain, client) or
    grow's figures."""

    client_cpu_s: float
    app_cpu_s: float
    result: list[float] | GrowArm


@dataclass
class OverheadRound:
    """A round: each arm once, in `order`. overhead.json keeps it flat, `<arm>_s` and so on (`to_json`), as it was."""

    round: int
    order: list[str]
    load: float
    arms: dict[str, Arm]

    @property
    def grow(self) -> GrowArm:
        result = self.arms["grow"].result
        assert isinstance(result, dict)
        return result

    @property
    def plain_s(self) -> float:
        result = self.arms["plain"].result
        assert isinstance(result, list)
        return sum(result)

    @property
    def overhead(self) -> float:
        return self.grow["ingest_s"] / self.plain_s - 1

    @property
    def around(self) -> float:
        return self.grow["ingest_s"] / self.grow["app_ingest_s"] - 1

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"round": self.round, "order": self.order, "load": self.load}
        for name, arm in self.arms.items():
            found[f"{name}_client_cpu_s"], found[f"{name}_app_cpu_s"] = arm.client_cpu_s, arm.app_cpu_s
            if isinstance(arm.result, list):
                found[f"{name}_halves_s"], found[f"{name}_s"] = arm.result, sum(arm.result)
            else:
                found[name] = arm.result
        return {**found, "overhead": self.overhead, "around": self.around}

    @classmethod
    def from_json(cls, raw: Any) -> OverheadRound:
        """A round of an earlier run's overhead.json (`--summarise`)."""
        arms = {
            name: Arm(raw[f"{name}_client_cpu_s"], raw[f"{name}_app_cpu_s"], raw.get(f"{name}_halves_s", raw.get(name)))
            for name in raw["order"]
        }
        return cls(raw["round"], raw["order"], raw["load"], arms)


def one_round(
    r: int,
    arms: list[str],
    server: OpenWebUIServer,
    docs: list[Document],
    inputs: tuple[Path, Path],
    app_pids: list[int],
) -> OverheadRound:
    """Each arm once, the order reversed every other round (A B, B A, ...): a drift over time and the larger store the
    second arm meets fall on each arm alike over a pair of rounds. `app_pids`: the app's and the embedder's
    processes, whose CPU each arm is charged with."""
    order = arms if r % 2 == 0 else arms[::-1]
    found = OverheadRound(r + 1, order, os.getloadavg()[0], {})
    for arm in order:
        client_before, app_before = client_cpu_s(), tree_cpu_s(app_pids)
        result = run_arm(arm, server, docs, inputs, str(r))
        found.arms[arm] = Arm(client_cpu_s() - client_before, tree_cpu_s(app_pids) - app_before, result)
    return found


def summarise(rounds: list[OverheadRound]) -> dict[str, float]:
    overheads = sorted(r.overhead for r in rounds)
    quartiles = statistics.quantiles(overheads, n=4) if len(overheads) >= 2 else [overheads[0]] * 3
    # the rounds as interleave pairs them (bench/gate/paired.py): Hodges-Lehmann ratio grow ÷ plain, exact 95%
    # signed-rank interval; the target is shown met when the whole interval is within +10%
    stats = paired.paired_stats(
        [r.plain_s for r in rounds], [r.grow["ingest_s"] for r in rounds], higher_is_better=False
    )
    interval = {} if stats is None else {
        "paired": stats.ratio.mean - 1, "paired_low": stats.ratio.low - 1, "paired_high": stats.ratio.high - 1
    }  # fmt: skip
    return {
        **interval,
        "around_median": statistics.median(r.around for r in rounds),
        "median": statistics.median(overheads),
        "q1": quartiles[0],
        "q3": quartiles[2],
        "min": overheads[0],
        "max": overheads[-1],
        # each order as often: the mean over whole pairs of rounds
        "balanced_mean": statistics.mean([r.overhead for r in rounds][: len(rounds) // 2 * 2] or overheads),
    }


def say(figures: dict[str, float], count: int, pinned: bool) -> None:
    """The overhead's median, spread and paired interval over `count` rounds."""
    print(
        f"overhead (grow ingest ÷ plain − 1) over {count} rounds{' (pinned)' if pinned else ''}: "
        f"median {figures['median']:+.1%} (quartiles {figures['q1']:+.1%} to {figures['q3']:+.1%}, "
        f"range {figures['min']:+.1%} to {figures['max']:+.1%}), order-balanced mean {figures['balanced_mean']:+.1%}; "
        f"within grow's own runs, its ingest over its upload loops − 1: median {figures['around_median']:+.1%}",
        flush=True,
    )
    if "paired" in figures:
        print(
            f"paired (Hodges-Lehmann, exact 95% signed-rank interval over the rounds): {figures['paired']:+.1%} "
            f"[{figures['paired_low']:+.1%}, {figures['paired_high']:+.1%}]; target <= +10%: "
            + ("shown met" if figures["paired_high"] <= 0.10 else "not shown"),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--arms", default="plain,grow", help="plain,grow or plain,client,grow")
    parser.add_argument("--pin", action="store_true", help="the app and the embedder on CPU 0, the client on CPU 1")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "grow-overhead")
    parser.add_argument("--summarise", nargs="+", type=Path, metavar="JSON", help="pool earlier runs' rounds, run none")
    args = parser.parse_args()
    if args.summarise:
        pooled = [OverheadRound.from_json(r) for path in args.summarise for r in json.loads(path.read_text())["rounds"]]
        say(summarise(pooled), len(pooled), pinned=False)
        return
    arms = args.arms.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    docs = documents(args.docs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout's SIGTERM still stops the app (finally)
    if args.pin:  # inherited by what starts now: the embedder and the app
        os.sched_setaffinity(0, {0})
    embedder, embed_url = start_embedder()
    rounds: list[OverheadRound] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inputs = write_ladder(root / "data", docs)
        try:
            webui, server = start_openwebui(root / "openwebui", args.out / "app.log", embed_url, "hash")
        except BaseException:
            embedder.kill()
            raise
        if args.pin:  # this script's client threads and grow's subprocess: the other core
            os.sched_setaffinity(0, {1})
        try:
            plain(server, docs[:4], "warm-up")  # the app's first-call costs are no arm's
            for r in range(args.rounds):
                rounds.append(one_round(r, arms, server, docs, inputs, [webui.pid, embedder.pid]))
                print(json.dumps(rounds[-1].to_json()), flush=True)
        finally:
            stop_process(webui)
            embedder.kill()
            embedder.wait()
    figures = summarise(rounds)
    say(figures, len(rounds), args.pin)
    for arm in arms:  # the median CPU seconds per round: the client's own, and the app's for the same documents
        client_cpu = statistics.median(r.arms[arm].client_cpu_s for r in rounds)
        app_cpu = statistics.median(r.arms[arm].app_cpu_s for r in rounds)
        print(f"{arm}: client CPU {client_cpu:.2f} s, app CPU {app_cpu:.2f} s (median per round)", flush=True)
    summary = {"docs": args.docs, "pinned": args.pin, "rounds": [r.to_json() for r in rounds], **figures}
    (args.out / "overhead.json").write_text(json.dumps(summary))


if __name__ == "__main__":
    main()
