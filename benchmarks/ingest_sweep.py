"""Issue 26's ingest sweep, measured on the real stack: Open WebUI 0.12.4 embedding through `ragbench ingest`'s
meter into infinity (MiniLM, CPU), both started here on loopback; prints the figures docs/ingest.md quotes.

    PYTHONPATH=. .venv/bin/python benchmarks/ingest_sweep.py [--docs 300] [--out reports/ingest-sweep]
        [--setting RAG_EMBEDDING_BATCH_SIZE=1,8,32 --setting RAG_EMBEDDING_CONCURRENT_REQUESTS=0,4]

The servers come from the environments scripts/envs/*.sh build (the ones the tests use). Open WebUI's embedding
base URL is pointed at the meter's port first, as a user does; everything else is `ragbench ingest` as written.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.models import EMBED_MODEL_NAME, INFINITY_ENV, infinity_argv, minilm_path
from tests.harness.openwebui import start_openwebui
from tests.harness.process import ManagedProcess, free_port, start_process, stop_process, wait_healthy

REPO = Path(__file__).resolve().parents[1]


def start_infinity(logs: Path) -> tuple[ManagedProcess, str]:
    port = free_port()
    argv = infinity_argv(((minilm_path(), EMBED_MODEL_NAME),), port)
    env = dict(INFINITY_ENV)
    proc = start_process("infinity-emb", argv, logs / "infinity.log", env=env)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/health", deadline_s=240)
    return proc, url


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "ingest-sweep")
    parser.add_argument("--setting", action="append", default=[])
    args = parser.parse_args()
    sweep = args.setting or ["RAG_EMBEDDING_BATCH_SIZE=1,8,32", "RAG_EMBEDDING_CONCURRENT_REQUESTS=0,4"]
    meter_port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        infinity, infinity_url = start_infinity(root)
        try:
            # Open WebUI embeds through the meter `ragbench ingest` starts on meter_port.
            webui, server = start_openwebui(
                root / "openwebui", root / "openwebui.log", f"http://127.0.0.1:{meter_port}/embedding", EMBED_MODEL_NAME
            )
            try:
                argv = [sys.executable, "-m", "bench", "ingest", "--dataset", "builtin:numpy-docs"]
                argv += ["--max-docs", str(args.docs), "-t", f"openwebui@{server.url}", "--out", str(args.out)]
                argv += ["--overwrite", "--meter-upstream", infinity_url, "--meter-port", str(meter_port)]
                for item in sweep:
                    argv += ["--setting", item]
                env = {**os.environ, "OPENWEBUI_API_KEY": server.api_key, "PYTHONPATH": str(REPO)}
                print("ragbench", " ".join(argv[3:]).replace(server.url, "URL"), flush=True)
                subprocess.run(argv, cwd=REPO, env=env, check=True)
            finally:
                stop_process(webui)
        finally:
            stop_process(infinity)


if __name__ == "__main__":
    main()
