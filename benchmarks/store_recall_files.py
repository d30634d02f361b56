"""Index recall of the stores that live in the app's own files (issue 47): Chroma (`vector_db/`, chromadb 1.5.9's
HNSW: m 16, ef_construction 100, ef_search 100 unless set) and Milvus Lite (`vector_db/milvus.db/`, faiss HNSW: m 16,
ef_construction 100, Open WebUI's MILVUS_HNSW_* defaults). Open WebUI opens them in its own process, so a reader
works on a copy: the app's process group is stopped (SIGSTOP) for the copy only, then resumed; the copy is opened as
after a crash (Chroma replays its log into the index persisted at its last sync; Milvus Lite its own files).
The copy is read with Open WebUI's interpreter and the store's own client (benchmarks/store_recall_dump.py): the
collection's vectors, and the ids its index answers for each query at each ef; the exact top k is cosine over those
vectors in numpy (store_recall.vector_recall).
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
from tests.harness.milvus import openwebui_extra as milvus_extra
from tests.harness.openwebui import env_dir as openwebui_env_dir

DUMP = Path(__file__).resolve().parent / "store_recall_dump.py"
CHROMA_EFS = (10, 40, 100, 200)  # 100: chromadb's default, what Open WebUI's collections get
MILVUS_EFS = (10, 40, 100, 200)  # Open WebUI's Milvus search passes no ef: Milvus Lite's default then applies


def snapshot(app_pgid: int, store_dir: Path, dest: Path) -> Path:
    """Copy `store_dir` to `dest` with the app's process group stopped, so the files are as one moment left them."""
    os.killpg(app_pgid, signal.SIGSTOP)
    try:
        shutil.copytree(store_dir, dest)
    finally:
        os.killpg(app_pgid, signal.SIGCONT)
    return dest


def _dump(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(milvus_extra())}
    env.pop("MILVUS_URI", None)  # pymilvus refuses a local path there (tests/harness/milvus.py)
    python = str(openwebui_env_dir() / "bin" / "python")
    done = subprocess.run([python, str(DUMP), *args], env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"store_recall_dump {args[0]}: {done.stderr.strip()[-400:]}")


def copy_recall(
    store: str, path: Path, collection: str, queries: Sequence[str], k: int = 10, efs: Sequence[int] = CHROMA_EFS
) -> list[Recall]:
    """Recall@k of `collection` in the copy at `path` (Chroma: its vector_db folder; Milvus Lite: its .db) for each
    ef of `efs`; the query vectors are the hash stand-in's of `queries`, as Open WebUI embeds them."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        np.save(work / "q.npy", np.array([hash_vector(q) for q in queries], dtype=np.float32))
        _dump("vectors", store, str(path), collection, str(work / "v.npz"))
        data = np.load(work / "v.npz")
        ids = [str(i) for i in data["ids"]]
        found: list[Recall] = []
        for ef in efs:
            if store == "chroma":  # read by the next process that loads the index (store_recall_dump.py)
                _dump("set-ef", store, str(path), collection, str(ef))
            _dump("search", store, str(path), collection, str(work / "q.npy"), str(k), str(ef), str(work / "a.npz"))
            answers = np.load(work / "a.npz")
            rows = [[str(i) for i in row] for row in answers["found"]]
            recall, short = vector_recall(ids, data["vectors"], np.load(work / "q.npy"), rows, k)
            found.append(Recall(collection, len(ids), f"ef {int(answers['ef'])}", recall, short, store))
        return found


def measure_copy(app_pgid: int, store: str, store_dir: Path, collection: str, queries: Sequence[str]) -> list[Recall]:
    """A rung's recall: snapshot the app's store folder, read the copy, remove it."""
    with tempfile.TemporaryDirectory(dir=store_dir.parent.parent) as tmp:  # beside the app's data: the same disk
        copy = snapshot(app_pgid, store_dir, Path(tmp) / "store")
        path = copy if store == "chroma" else copy / "milvus.db"
        return copy_recall(store, path, collection, queries, efs=CHROMA_EFS if store == "chroma" else MILVUS_EFS)
