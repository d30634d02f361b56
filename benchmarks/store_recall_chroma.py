"""Index recall of Chroma inside Open WebUI (issue 47): chromadb 1.5.9's HNSW as Open WebUI makes its collections
(cosine; m 16, ef_construction 100, ef_search 100: chromadb's defaults). Open WebUI opens `vector_db/` in its own
process, so the reader works on a copy: the app's process group is stopped (SIGSTOP) for the copy only, then resumed;
the copy is opened as after a crash (Chroma replays its log into the index persisted at its last sync, a graph built
from the same vectors in the same order). It is read with Open WebUI's interpreter and chromadb
(benchmarks/store_recall_dump.py): the collection's vectors, and the ids its index answers for each query at each
ef_search; the exact top k is cosine over those vectors in numpy (store_recall.vector_recall).

Not for Milvus Lite: a copy of its folder lacks the rows its WAL writer still buffers in the app's memory (a copy at
10 documents held 1,318 and 1,593 rows of a base of ~2,200); its recall is measured live, in the process that wrote
it, by benchmarks/milvus_lite_ops.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from store_recall import Recall, vector_recall

from tests.harness.hash_embedder import hash_vector
from tests.harness.openwebui import env_dir as openwebui_env_dir

DUMP = Path(__file__).resolve().parent / "store_recall_dump.py"
EFS = (10, 40, 100, 200)  # 100: chromadb's default, what Open WebUI's collections get


def snapshot(app_pgid: int, store_dir: Path, dest: Path) -> Path:
    """Copy `store_dir` to `dest` with the app's process group stopped, so the files are as one moment left them."""
    os.killpg(app_pgid, signal.SIGSTOP)
    try:
        shutil.copytree(store_dir, dest)
    finally:
        os.killpg(app_pgid, signal.SIGCONT)
    return dest


def _dump(*args: str) -> None:
    python = str(openwebui_env_dir() / "bin" / "python")
    done = subprocess.run([python, str(DUMP), *args], capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"store_recall_dump {args[0]}: {done.stderr.strip()[-400:]}")


def copy_recall(
    path: Path, collection: str, queries: Sequence[str], k: int = 10, efs: Sequence[int] = EFS
) -> list[Recall]:
    """Recall@k of `collection` in the copy of `vector_db/` at `path` for each ef_search of `efs`; the query
    vectors are the hash stand-in's of `queries`, as Open WebUI embeds them."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        np.save(work / "q.npy", np.array([hash_vector(q) for q in queries], dtype=np.float32))
        _dump("vectors", str(path), collection, str(work / "v.npz"))
        data = np.load(work / "v.npz")
        ids = [str(i) for i in data["ids"]]
        found: list[Recall] = []
        for ef in efs:
            _dump("set-ef", str(path), collection, str(ef))  # read by the next process that loads the index
            _dump("search", str(path), collection, str(work / "q.npy"), str(k), str(work / "a.npz"))
            answers = np.load(work / "a.npz")
            rows = [[str(i) for i in row] for row in answers["found"]]
            recall, short = vector_recall(ids, data["vectors"], np.load(work / "q.npy"), rows, k)
            found.append(Recall(collection, len(ids), f"ef_search {int(answers['ef'])}", recall, short, "chroma"))
        return found


def measure_copy(app_pgid: int, vector_db: Path, collection: str, queries: Sequence[str]) -> list[Recall]:
    """A rung's recall: snapshot the app's `vector_db/`, read the copy, remove it."""
    with tempfile.TemporaryDirectory(dir=vector_db.parent.parent) as tmp:  # beside the app's data: the same disk
        return copy_recall(snapshot(app_pgid, vector_db, Path(tmp) / "vector_db"), collection, queries)
