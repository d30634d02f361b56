"""Milvus Lite 3.2.2 for Open WebUI 0.12.4's `milvus` store (issue 47; env from scripts/envs/milvus.sh).

Milvus Lite is no server of its own: pymilvus, given a local `.db` path, starts milvus-lite's gRPC service on a thread
inside the process that opened it (pure Python over faiss, HNSW by faiss). Here that process is Open WebUI, so the
store's memory is the app's (as with Chroma) and its bytes are `DATA_DIR/vector_db/milvus.db/`.

MILVUS_URI must stay unset: pymilvus reads the same variable when it is imported and refuses anything but an
http(s) address ("Illegal uri: [….db]"), so Open WebUI would not start; unset, Open WebUI opens its default,
`{DATA_DIR}/vector_db/milvus.db`, which is Milvus Lite.
"""

from __future__ import annotations

from pathlib import Path

from tests.harness.models import env_root

VERSION = "3.2.2"  # milvus-lite; with pymilvus 2.6.14, as Open WebUI 0.12.4's `all` extra pins it


def env_dir() -> Path:
    return env_root() / f"milvus-lite-{VERSION}"


def openwebui_extra() -> Path:
    """pymilvus, milvus-lite, faiss-cpu and cachetools: put on Open WebUI's PYTHONPATH."""
    return env_dir() / "openwebui-extra"


def milvus_store(extra_path: Path = Path(), index: str = "HNSW") -> dict[str, str]:
    """The environment that puts Open WebUI's vectors in Milvus Lite under `index` (Open WebUI's default HNSW, m 16,
    ef_construction 100; cosine), in its DATA_DIR."""
    return {
        "VECTOR_DB": "milvus",
        "MILVUS_INDEX_TYPE": index,
        "PYTHONPATH": str(extra_path if extra_path != Path() else openwebui_extra()),
    }


def prepare_data_dir(openwebui_work: Path) -> Path:
    """Make the folder of Open WebUI's default MILVUS_URI under `openwebui_work` (start_openwebui's work_dir), which
    pymilvus refuses to open otherwise ("Open local milvus failed, dir: …/vector_db not exists": Open WebUI makes it
    only for Chroma); returns where Milvus Lite's data will be."""
    folder = openwebui_work / "data" / "vector_db"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "milvus.db"
