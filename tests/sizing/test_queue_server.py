"""The queue server's CPU kind (`--busy-iterations`): it answers like the sleep kind, one request at a time."""

from __future__ import annotations

import sys
import time
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


def test_openai_route_serves_hash_vectors_one_call_at_a_time(tmp_path: Path) -> None:
    """OpenAI's /embeddings: a call takes service-ms + per-token-ms x characters/4, in one FIFO slot, so two calls
    sent together are answered no sooner than both services after the first was sent."""
    port = free_port()
    argv = [sys.executable, str(QUEUE_SERVER), "--port", str(port), "--service-ms", "200", "--per-token-ms", "1"]
    proc = start_process("queue-server", argv, tmp_path / "queue.log")
    url = f"http://127.0.0.1:{port}"
    texts = ["the cat sat on the mat " * 5, "a dog"]  # 115 + 5 characters: 30 tokens, 230 ms a call
    try:
        wait_healthy(proc, f"{url}/metrics", deadline_s=30)

        def embed(path: str) -> httpx.Response:
            return httpx.post(f"{url}{path}", json={"model": "m", "input": texts}, timeout=30)

        started = time.monotonic()
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(embed, ["/embeddings", "/v1/embeddings"]))
        both_done_s = time.monotonic() - started
        single = httpx.post(f"{url}/embeddings", json={"model": "m", "input": "the mat"}, timeout=30).json()
    finally:
        stop_process(proc)
    assert [a.status_code for a in answers] == [200, 200]
    first, second = (a.json() for a in answers)
    assert first == second  # deterministic vectors
    assert [row["index"] for row in first["data"]] == [0, 1]
    assert first["usage"]["prompt_tokens"] == 30
    vectors = [row["embedding"] for row in first["data"]]
    assert [len(v) for v in vectors] == [128, 128]
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-9
    assert vectors[0] != vectors[1]
    assert len(single["data"]) == 1  # one string in, one vector out
    assert both_done_s >= 0.46  # 2 x 230 ms in one slot (in parallel they would be done after ~0.23 s)
