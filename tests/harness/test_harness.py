"""The server harness itself: a failed start shows the server's own log; stop ends the process group."""

from __future__ import annotations

import sys

import pytest

from tests.harness.process import ServerStartError, free_port, start_process, stop_process, wait_healthy


def test_a_server_that_exits_shows_its_log(tmp_path):
    proc = start_process(
        "broken", [sys.executable, "-c", "print('config error: no model'); raise SystemExit(3)"], tmp_path / "b.log"
    )
    with pytest.raises(ServerStartError) as info:
        wait_healthy(proc, f"http://127.0.0.1:{free_port()}/health", deadline_s=20)
    assert "broken exited with code 3" in str(info.value) and "config error: no model" in str(info.value)


def test_deadline_and_stop_by_pid(tmp_path):
    proc = start_process(
        "sleeper",
        [sys.executable, "-c", "import time; print('starting', flush=True); time.sleep(60)"],
        tmp_path / "s.log",
    )
    with pytest.raises(ServerStartError) as info:
        wait_healthy(proc, f"http://127.0.0.1:{free_port()}/health", deadline_s=1, interval_s=0.2)
    assert "not healthy" in str(info.value) and "starting" in str(info.value)
    stop_process(proc, grace_s=5)
    assert proc.popen.poll() is not None


def test_a_healthy_server_is_waited_for(tmp_path):
    port = free_port()
    proc = start_process(
        "http",
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        tmp_path / "h.log",
        cwd=tmp_path,
    )
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/", deadline_s=20)
    finally:
        stop_process(proc)
    assert proc.popen.returncode is not None
