"""Start a real Open WebUI 0.12.4 (env from scripts/envs/openwebui.sh) on loopback, embedding
through an OpenAI-shaped server, and make its first (admin) user and an API key.

Settings persist in Open WebUI's database after the first start, so every start gets a fresh
DATA_DIR under the test's own temporary folder: nothing outside it is read or changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.harness.models import env_root
from tests.harness.process import ManagedProcess, free_port, start_process, stop_process, wait_healthy

VERSION = "0.12.4"


@dataclass(frozen=True)
class OpenWebUIServer:
    url: str
    api_key: str  # the admin's sk-… key; tests put it in OPENWEBUI_API_KEY, as a user would
    data_dir: Path


def env_dir() -> Path:
    return env_root() / f"open-webui-{VERSION}"


def pgvector_store(db_url: str, extra_path: Path, dim: int) -> dict[str, str]:
    """The environment that puts Open WebUI's vectors in PostgreSQL + pgvector as halfvec under an HNSW index (its
    own database stays SQLite in DATA_DIR); `extra_path` holds the `postgres` extra's packages (pgvector,
    psycopg2-binary: scripts/envs/pgvector.sh), put on its PYTHONPATH so that its own environment stays as built.
    Open WebUI pads (or cuts) every vector to PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH, 1536 by default: set to the
    embedder's `dim`, so that the store holds what Chroma holds (MiniLM: 384) and no zeros."""
    return {
        "VECTOR_DB": "pgvector",
        "PGVECTOR_DB_URL": db_url,
        "PGVECTOR_USE_HALFVEC": "true",
        "PGVECTOR_INDEX_METHOD": "hnsw",
        "PGVECTOR_INITIALIZE_MAX_VECTOR_LENGTH": str(dim),
        "PYTHONPATH": str(extra_path),
    }


def start_openwebui(
    work_dir: Path, log_path: Path, embed_url: str, embed_model: str, store_env: dict[str, str] | None = None
) -> tuple[ManagedProcess, OpenWebUIServer]:
    """Start the server, wait for /health, sign up the admin and create its API key. `store_env`: the vector store's
    settings (default Chroma in DATA_DIR; `pgvector_store(...)` for PostgreSQL).

    The caller stops the returned process; if anything here fails, the process is stopped first."""
    data_dir = work_dir / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        "DATA_DIR": str(data_dir),
        "WEBUI_SECRET_KEY": os.urandom(16).hex(),
        "WEBUI_AUTH": "true",
        "ENABLE_SIGNUP": "true",
        "ENABLE_API_KEYS": "true",
        "ENABLE_OLLAMA_API": "false",
        "ENABLE_OPENAI_API": "false",
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "false",
        "DO_NOT_TRACK": "true",
        "ENABLE_VERSION_UPDATE_CHECK": "false",
        "VECTOR_DB": "chroma",
        "RAG_EMBEDDING_ENGINE": "openai",
        "RAG_OPENAI_API_BASE_URL": embed_url,
        "RAG_OPENAI_API_KEY": "none",
        "RAG_EMBEDDING_MODEL": embed_model,
        # Default 1: one HTTP request per chunk. Hybrid search re-embeds every candidate chunk per query.
        "RAG_EMBEDDING_BATCH_SIZE": "32",
        "NO_PROXY": "127.0.0.1,localhost",
        **(store_env or {}),
    }
    argv = [str(env_dir() / "bin" / "open-webui"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = start_process("open-webui", argv, log_path, env=env, cwd=work_dir)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, f"{url}/health", deadline_s=300)
        with httpx.Client(base_url=url, timeout=60) as client:
            signup = client.post(
                "/api/v1/auths/signup",
                json={"name": "ragbench", "email": "ragbench@example.com", "password": os.urandom(12).hex()},
            )
            signup.raise_for_status()
            token = signup.json()["token"]
            key = client.post("/api/v1/auths/api_key", headers={"Authorization": f"Bearer {token}"})
            key.raise_for_status()
    except BaseException:
        stop_process(proc)
        raise
    return proc, OpenWebUIServer(url, key.json()["api_key"], data_dir)


def admin_client(server: OpenWebUIServer) -> httpx.Client:
    """A client of `server`'s API as its admin (the key the harness made)."""
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.api_key}"}, timeout=60)
