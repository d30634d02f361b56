"""The queue server's CPU kind (`--busy-iterations`): it answers like the sleep kind, one request at a time."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.harness.process import free_port, start_process, stop_process, wait_healthy

QUEUE_SERVER = Path(__file__).with_name("queue_server.py")


def test_cpu_kind_answers_every_request_in_turn(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, str(QUEUE_SERVER), "--port", str(port), "--busy-iterations", "20000"]
    proc = start_process("queue-server", argv, tmp_path / "queue.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, f"{url}/metrics", deadline_s=30)

        def embed(i: int) -> httpx.Response:
            return httpx.post(f"{url}/embed", json={"inputs": [f"text {i}", "another"]}, timeout=30)

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(embed, range(4)))
        assert [a.status_code for a in answers] == [200] * 4
        assert all(len(a.json()) == 2 for a in answers)
        metrics = httpx.get(f"{url}/metrics", timeout=30).text
        assert 'te_request_success{method="batch"} 4' in metrics
    finally:
        stop_process(proc)
