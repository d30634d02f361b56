"""Fixtures for load tests: the scripted TEI-shaped server (tests/load/fixture_server.py) as a subprocess, a
worker pool, and a workload of short inline texts."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from bench.load.pool import stop_pool, worker_pool
from bench.load.workload import Workload
from tests.harness.process import ManagedProcess, free_port, start_process, stop_process, wait_healthy

SERVER = Path(__file__).with_name("fixture_server.py")


@pytest.fixture
def load_server(tmp_path: Path) -> Iterator[Callable[..., tuple[str, ManagedProcess]]]:
    """Factory: `load_server(service_ms=2, stall_ms=100)` -> (base URL, process); every server stopped at the end."""
    started: list[ManagedProcess] = []

    def start(**options) -> tuple[str, ManagedProcess]:
        port = free_port()
        argv = [sys.executable, str(SERVER), "--port", str(port)]
        for key, value in options.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        proc = start_process("load-fixture", argv, tmp_path / f"fixture-{port}.log")
        started.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, f"{url}/metrics", deadline_s=30)
        return url, proc

    yield start
    for proc in started:
        stop_process(proc)


def inline_workload() -> Workload:
    """64 texts `text number N`, the first 8 as the idle probes' texts, lengths counted in words."""
    texts = [f"text number {i}" for i in range(64)]
    return Workload(texts, texts[:8], "inline", lambda ts: [len(t.split()) for t in ts], "words")


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    """One worker process for a module's measured points."""
    executor = worker_pool(1)
    yield executor
    stop_pool(executor)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Callable[[float], str]]:
    """Factory: a loopback queue server of `service_ms` per request (one at a time), stopped at the end."""
    from tests.sizing.test_size_command import _start_queue_server

    started = []

    def start(service_ms: float) -> str:
        url, proc = _start_queue_server(tmp_path, service_ms)
        started.append(proc)
        return url

    yield start
    for proc in started:
        stop_process(proc)
