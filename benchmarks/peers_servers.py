"""The loopback servers benchmarks/peers.py drives every tool against (docs/peers.md).

- nginx answering TEI's `POST /embed` and OpenAI's `POST /v1/embeddings` with a static JSON answer each (the client
  ceiling: the server costs next to nothing, so requests/s is the client's);
- the stall server: tests/load/fixture_server.py's clock (service, then a stall in the first `stall-ms` of every
  `period-ms`), answering both shapes (`stall_server.py` here adds OpenAI's);
- the queue servers: tests/sizing/queue_server.py (fixed or lognormal service, FIFO slots; OpenAI's route included).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.process import free_port, start_process, stop_process, wait_healthy  # noqa: E402

OPENAI_ANSWER = (
    '{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.5,0.5,0.5]}],'
    '"model":"peers","usage":{"prompt_tokens":3,"total_tokens":3}}'
)
MODELS_ANSWER = '{"object":"list","data":[{"id":"peers","object":"model","owned_by":"peers"}]}'

NGINX_CONFIG = """worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  keepalive_requests 10000000;
  server {{
    listen 127.0.0.1:{port};
    location = /embed {{ default_type application/json; return 200 '[[0.5,0.5,0.5,0.5]]'; }}
    location = /v1/embeddings {{ default_type application/json; return 200 '{openai}'; }}
    location = /v1/models {{ default_type application/json; return 200 '{models}'; }}
    location = /health {{ return 200 ''; }}
  }}
}}
"""


def nginx_config(tmp: str, port: int) -> str:
    """nginx's configuration: one worker (one core, as the clients get), a static answer per location."""
    return NGINX_CONFIG.format(tmp=tmp, port=port, openai=OPENAI_ANSWER, models=MODELS_ANSWER)


@contextmanager
def nginx() -> Iterator[str]:
    """nginx on a free loopback port; yields its base URL."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ragbench-peers-nginx-") as tmp:
        (Path(tmp) / "nginx.conf").write_text(nginx_config(tmp, port))
        process = subprocess.Popen(
            [binary, "-c", f"{tmp}/nginx.conf", "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    urllib.request.urlopen(f"{url}/health", timeout=1).read()
                    break
                except OSError as exc:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(f"nginx did not start ({tmp}/error.log)") from exc
                    time.sleep(0.1)
            yield url
        finally:
            process.terminate()
            process.wait(10)


@contextmanager
def python_server(script: str, args: list[str], log: Path) -> Iterator[str]:
    """A server script of this repository on a free port (`--port` added); yields its base URL."""
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    process = start_process(script, [sys.executable, str(ROOT / script), "--port", str(port), *args], log)
    try:
        wait_healthy(process, f"http://127.0.0.1:{port}/metrics", deadline_s=30)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)
