"""`ragbench load --ray`: two Ray actors on a local head (loopback) against `--workers 2` on the same fixture server."""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bench.results.store import read_results
from tests.harness.cli import run_cli
from tests.harness.process import free_port, start_process, stop_process


@pytest.fixture
def ray_head(tmp_path: Path):
    """`ray start --head --block` on 127.0.0.1 in its own process group, stopped by its PID (not `ray stop`)."""
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="rb-ray-", dir="/tmp"))  # Ray's socket paths must stay under 107 bytes
    ray_bin = Path(sys.executable).with_name("ray")
    proc = start_process(
        "ray-head",
        [
            str(ray_bin),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            "--num-cpus=2",
            f"--temp-dir={temp}",
        ],
        tmp_path / "ray.log",
        env={"RAY_USAGE_STATS_ENABLED": "0"},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.popen.poll() is not None:
                stop_process(proc)
                pytest.fail(f"ray head did not start:\n{proc.log_tail()}", pytrace=False)
            time.sleep(0.3)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(proc)
        shutil.rmtree(temp, ignore_errors=True)


def _load(url: str, out: Path, monkeypatch, capsys, *extra: str):
    code, _, stderr = run_cli(
        [
            "load",
            "-e",
            f"f=tei@{url}",
            "--rate",
            "200",
            "--arrival",
            "poisson",
            "--duration",
            "2s",
            "--warmup",
            "0.5s",
            "--workers",
            "2",
            "--seed",
            "7",
            "--out",
            str(out),
            *extra,
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    (point,) = read_results(out / "results.jsonl").load_points
    return point


@pytest.mark.slow
def test_two_ray_actors_match_two_worker_processes(load_server, ray_head, tmp_path, monkeypatch, capsys):
    url, _ = load_server(service_ms=50)  # long enough that a busy machine's scheduling jitter stays small beside it
    monkeypatch.setenv("RAY_ADDRESS", "")  # the test's head only
    local = _load(url, tmp_path / "local", monkeypatch, capsys)
    ray = _load(url, tmp_path / "ray", monkeypatch, capsys, "--ray", ray_head)
    for p in (local, ray):
        print(p.client, p.requests, p.latency_ms.scheduled)
    # The same seeded Poisson schedule, split the same way: exactly the same requests are due.
    assert ray.requests.sent + ray.requests.unsent == local.requests.sent + local.requests.unsent
    assert ray.requests.errors == local.requests.errors == {}
    assert ray.client.workers == 2 and ray.client.hosts == [socket.gethostname()] * 2
    # Merged histograms hold every answer; the median agrees within noise: 50 ms service, and on this shared 2-core
    # machine (load ~13) two runs of the same local sweep differ by up to ~15 ms at p50.
    assert ray.latency_ms.scheduled.count == ray.requests.ok
    assert local.latency_ms.service.p50 >= 50.0 and ray.latency_ms.service.p50 >= 50.0
    assert abs(ray.latency_ms.scheduled.p50 - local.latency_ms.scheduled.p50) <= 20.0
    assert abs(ray.throughput.requests_per_s - local.throughput.requests_per_s) <= 0.1 * local.throughput.requests_per_s


def test_ray_refuses_in_process_endpoints(tmp_path, monkeypatch, capsys):
    code, _, stderr = run_cli(
        ["load", "-e", "r=reference", "--ray", "auto", "--out", str(tmp_path / "o")], monkeypatch, capsys
    )
    assert code == 2 and "--ray runs HTTP endpoints" in stderr


def test_size_takes_ray_through_loads_pool_factory(tmp_path, monkeypatch, capsys):
    """`size --ray` is checked as `load --ray` is: in-process endpoints refused, a head that takes no TCP
    connection named in one line, both before any endpoint is asked anything and before --out is touched."""
    out = tmp_path / "o"
    code, _, stderr = run_cli(
        ["size", "-e", "r=reference", "--slo-p99", "100", "--ray", "auto", "--out", str(out)], monkeypatch, capsys
    )
    assert code == 2 and "size: --ray runs HTTP endpoints" in stderr, stderr
    address = f"127.0.0.1:{free_port()}"
    code, _, stderr = run_cli(
        ["size", "-e", "x=tei@http://127.0.0.1:9", "--slo-p99", "100", "--ray", address, "--out", str(out)],
        monkeypatch,
        capsys,
    )
    assert code == 2 and stderr.count("\n") == 1 and f"--ray {address}: no Ray cluster answers there" in stderr
    assert not out.exists()
