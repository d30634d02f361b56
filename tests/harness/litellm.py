"""A real LiteLLM proxy (its environment from scripts/envs/litellm.sh) in front of an OpenAI-compatible embedder
and an infinity-style reranker: the session's, and the one a test nests between two meter routes."""

from __future__ import annotations

from pathlib import Path

from tests.harness.process import ManagedProcess, free_port, start_process, wait_healthy

EMBED_ALIAS = "minilm-embed"
RERANK_ALIAS = "minilm-rerank"


def start_litellm(
    env_dir: Path, work_dir: Path, upstream: str, embed_model: str, rerank_model: str, key: str, port: int = 0
) -> tuple[ManagedProcess, str]:
    """Start LiteLLM with the aliases EMBED_ALIAS (openai/ → `upstream`/embeddings) and RERANK_ALIAS (infinity/ →
    `upstream`/rerank), `key` its master key; its URL once it answers. The caller stops the process."""
    config = work_dir / "litellm.yaml"
    # YAML written by hand: the project does not depend on a YAML library.
    config.write_text(
        "model_list:\n"
        f"  - model_name: {EMBED_ALIAS}\n"
        "    litellm_params:\n"
        f"      model: openai/{embed_model}\n"
        f"      api_base: {upstream}\n"
        "      api_key: none\n"
        "    model_info:\n"
        "      mode: embedding\n"
        f"  - model_name: {RERANK_ALIAS}\n"
        "    litellm_params:\n"
        f"      model: infinity/{rerank_model}\n"
        f"      api_base: {upstream}\n"
        "      api_key: none\n"
        "    model_info:\n"
        "      mode: rerank\n"
        "general_settings:\n"
        f"  master_key: {key}\n"
    )
    port = port or free_port()
    argv = [str(env_dir / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False", "NO_PROXY": "127.0.0.1,localhost"}
    proc = start_process("litellm", argv, work_dir / "litellm.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/health/liveliness", deadline_s=120)
    return proc, url
