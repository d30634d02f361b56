"""nginx on loopback answering the embedding wire shapes with a fixed body: the fastest server there is, for
measuring a load client's ceiling (benchmarks/client_ceiling.py, benchmarks/peers.py).

    with nginx_embed(port=18090, dim=4) as server:
        server.openai_base   # http://127.0.0.1:18090/v1   -> POST /v1/embeddings answers OpenAI's shape
        server.tei_base      # http://127.0.0.1:18090      -> POST /embed answers TEI's shape
                         # GET /v1/models (AIPerf, GuideLLM ask it) and GET /health answer too

or `start_nginx(folder, port, dim)` / `server.stop()` where a context manager does not fit. `write_config` alone
writes the configuration (nginx.conf in `folder`) and returns its path.

Needs nginx (`apt-get install -y nginx`). One worker process by default, `daemon off`, every temp path under the
folder, keep-alive connections never closed by nginx (keepalive_requests 1000000): a client's connections stay
open for a whole run, as wrk's do. Every answer is one fixed body for one input (`return 200 '...'`: nginx's static
file module refuses POST), so a batch of n > 1 gets a wrong-shaped answer: measure with batch 1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MODEL = "nginx-embed"  # the model the OpenAI answer names (any model a request names gets the same answer)
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


def openai_answer(dim: int, model: str = MODEL, tokens: int = 1) -> str:
    """OpenAI's `/embeddings` answer to one input: `{object, data: [{object, index, embedding}], model, usage}`."""
    vector = [round(0.5 / (i + 1), 6) for i in range(dim)]
    body = {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
    return json.dumps(body, separators=(",", ":"))


def models_answer(model: str = MODEL) -> str:
    """OpenAI's `/models` answer: the one model."""
    body = {"object": "list", "data": [{"id": model, "object": "model", "owned_by": model}]}
    return json.dumps(body, separators=(",", ":"))


def tei_answer(dim: int) -> str:
    """TEI's `/embed` answer to one input: a list of one vector."""
    return json.dumps([[round(0.5 / (i + 1), 6) for i in range(dim)]], separators=(",", ":"))


CONFIG = """worker_processes {workers};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server {{
    listen 127.0.0.1:{port};
    location = /v1/embeddings {{ default_type application/json; return 200 '{openai}'; }}
    location = /embeddings {{ default_type application/json; return 200 '{openai}'; }}
    location = /embed {{ default_type application/json; return 200 '{tei}'; }}
    location = /v1/models {{ default_type application/json; return 200 '{models}'; }}
    location = /health {{ return 200 ''; }}
  }}
}}
"""


def write_config(folder: Path, port: int, dim: int = 4, workers: int = 1, model: str = MODEL, tokens: int = 1) -> Path:
    """nginx.conf in `folder` (its pid, log and temp paths there too); the bodies hold no `'` to escape. OpenAI's
    answers name `model` and count `tokens` prompt tokens."""
    bodies = {"openai": openai_answer(dim, model, tokens), "tei": tei_answer(dim), "models": models_answer(model)}
    conf = folder / "nginx.conf"
    conf.write_text(CONFIG.format(tmp=folder, port=port, workers=workers, **bodies))
    return conf


@dataclass
class NginxServer:
    process: subprocess.Popen[bytes]
    folder: Path
    port: int

    @property
    def tei_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop nginx (its master ends its workers on SIGTERM), waited for."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)


def start_nginx(
    folder: Path, port: int, dim: int = 4, workers: int = 1, model: str = MODEL, tokens: int = 1
) -> NginxServer:
    """nginx started on `port` with `write_config`'s configuration, answering before this returns."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    conf = write_config(folder, port, dim, workers, model, tokens)
    process = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = NginxServer(process, folder, port)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(f"{server.tei_base}/health", timeout=1).read()
            return server
        except OSError as exc:
            if time.monotonic() > deadline or process.poll() is not None:
                server.stop()
                log = folder / "error.log"
                raise RuntimeError(f"nginx did not start: {log.read_text() if log.exists() else ''}") from exc
            time.sleep(0.1)


@contextmanager
def nginx_embed(
    port: int = 18090, dim: int = 4, workers: int = 1, model: str = MODEL, tokens: int = 1
) -> Iterator[NginxServer]:
    """nginx answering the embedding shapes on loopback for the block, stopped after it (also on error)."""
    with tempfile.TemporaryDirectory(prefix="ragbench-nginx-embed-") as tmp:
        server = start_nginx(Path(tmp), port, dim, workers, model, tokens)
        try:
            yield server
        finally:
            server.stop()
