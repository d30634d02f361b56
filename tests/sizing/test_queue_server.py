"""The queue server's CPU kind (`--busy-iterations`): it answers like the sleep kind, one request at a time."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

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


def test_slots_serve_in_arrival_order_and_heavy_tails_are_the_seeded_draws() -> None:
    """`--slots 2`: two requests at once, the third on the first slot free (M/G/c on the server's virtual clock);
    `--service-cv`: each service the next of the seeded lognormal draws (`service_draws`), of the asked mean, so the
    truth a size run is checked against is a simulation of the very service times served."""
    import numpy as np

    from tests.sizing.queue_server import QueueServer, _Off, service_draws

    fixed = QueueServer(_Off(port=0, service_ms=100.0, slots=2))
    assert [fixed.fifo_end(0.0, 0.1) for _ in range(3)] == [0.1, 0.1, pytest.approx(0.2)]
    heavy = QueueServer(_Off(port=0, service_ms=148.0, service_cv=1.5, slots=4, service_seed=3))
    served = [heavy.service_s(148.0) for _ in range(12_000)]  # past one block of draws
    assert served == pytest.approx(service_draws(148.0, 1.5, 12_000, seed=3).tolist())
    draws = service_draws(148.0, 1.5, 200_000)
    cv = float(np.std(draws) / np.mean(draws))
    assert np.mean(draws) == pytest.approx(0.148, rel=0.03) and cv == pytest.approx(1.5, rel=0.1)
