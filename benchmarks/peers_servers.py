"""The loopback servers benchmarks/peers.py drives every tool against (docs/peers.md).

- nginx answering TEI's `POST /embed` and OpenAI's `POST /v1/embeddings` with a static JSON answer each (the client
  ceiling: the server costs next to nothing, so requests/s is the client's);
- the stall server: tests/load/fixture_server.py (service, then a stall in the first `stall-ms` of every
  `period-ms`), answering both shapes on that clock;
- the queue servers: tests/sizing/queue_server.py (fixed or lognormal service, FIFO slots; OpenAI's route included).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.nginx_embed import nginx_embed  # noqa: E402
from tests.harness.process import free_port, start_process, stop_process, wait_healthy  # noqa: E402

MODEL = "peers"  # the model every tool names; nginx's answers name it too
TOKENS = 3  # the prompt tokens nginx's OpenAI answer counts for the tools' one short text ("hello world")


@contextmanager
def nginx() -> Iterator[str]:
    """nginx (benchmarks/nginx_embed.py) on a free loopback port, one worker (one core, as the clients get);
    yields its base URL."""
    with nginx_embed(free_port(), model=MODEL, tokens=TOKENS) as server:
        yield server.tei_base


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
