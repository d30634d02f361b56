"""Fixtures for load tests: the scripted TEI-shaped server (tests/load/fixture_server.py) as a subprocess."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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
