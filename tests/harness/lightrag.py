"""Start a real LightRAG 1.5.7 server (env from scripts/envs/lightrag.sh) on loopback.

Its `.env` lives in a folder of its own with its working and input directories, so nothing outside
the test's temporary folder is touched. Two settings that matter for speed are stated here, as the
benchmark must state them: SSL_CERT_FILE points at a one-certificate PEM (LightRAG builds a new
OpenAI client, loading the CA bundle, on every model call), and MAX_GLEANING=0 (one extraction
call per chunk instead of two).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.harness.models import env_root
from tests.harness.process import ManagedProcess, free_port, start_process, wait_healthy

VERSION = "1.5.7"


@dataclass(frozen=True)
class LightRAGServer:
    url: str
    api_key: str  # tests put it in LIGHTRAG_API_KEY, as a user would
    work_dir: Path


@dataclass(frozen=True)
class Providers:
    llm_url: str  # OpenAI base URL of the chat model
    llm_model: str
    embed_url: str  # OpenAI base URL of the embedding model
    embed_model: str
    embed_dim: int
    rerank_url: str | None = None  # full URL of a Cohere-shaped /rerank
    rerank_model: str | None = None


def env_dir() -> Path:
    return env_root() / f"lightrag-hku-{VERSION}"


def one_certificate_pem(target: Path) -> Path:
    """The first certificate of certifi's bundle: a valid, tiny CA file (nothing here uses TLS)."""
    import certifi

    text = Path(certifi.where()).read_text()
    end = text.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")
    target.write_text(text[text.index("-----BEGIN CERTIFICATE-----") : end] + "\n")
    return target


def start_lightrag(work_dir: Path, log_path: Path, providers: Providers) -> tuple[ManagedProcess, LightRAGServer]:
    """Start the server and wait until /health answers. The caller stops the returned process."""
    work_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    key = "lr-" + os.urandom(12).hex()
    settings = {
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "WORKING_DIR": str(work_dir / "rag_storage"),
        "INPUT_DIR": str(work_dir / "inputs"),
        "LIGHTRAG_API_KEY": key,
        "LLM_BINDING": "openai",
        "LLM_BINDING_HOST": providers.llm_url,
        "LLM_BINDING_API_KEY": "none",
        "LLM_MODEL": providers.llm_model,
        "EMBEDDING_BINDING": "openai",
        "EMBEDDING_BINDING_HOST": providers.embed_url,
        "EMBEDDING_BINDING_API_KEY": "none",
        "EMBEDDING_MODEL": providers.embed_model,
        "EMBEDDING_DIM": str(providers.embed_dim),
        "MAX_GLEANING": "0",
    }
    if providers.rerank_url:
        settings.update(
            {
                "RERANK_BINDING": "cohere",
                "RERANK_BINDING_HOST": providers.rerank_url,
                "RERANK_BINDING_API_KEY": "none",
                "RERANK_MODEL": providers.rerank_model or "",
            }
        )
    (work_dir / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    env = {
        "TIKTOKEN_CACHE_DIR": str(env_dir() / "tiktoken-cache"),
        "SSL_CERT_FILE": str(one_certificate_pem(work_dir / "one-cert.pem")),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    proc = start_process("lightrag", [str(env_dir() / "bin" / "lightrag-server")], log_path, env=env, cwd=work_dir)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/health", deadline_s=120)
    return proc, LightRAGServer(url, key, work_dir)
