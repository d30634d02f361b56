"""What the benchmark scripts share (issue 49): the machine's load to print beside each figure, the loopback
servers (tests/load/fixture_server.py, tests/sizing/queue_server.py) started, awaited and stopped in one place, and
CPU-bound neighbours that load the machine on purpose. The scripts put the repository root on sys.path first."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness.process import ManagedProcess, free_port, start_process, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_SERVER = ROOT / "tests" / "load" / "fixture_server.py"
QUEUE_SERVER = ROOT / "tests" / "sizing" / "queue_server.py"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: every figure on a shared machine is read beside them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@contextmanager
def fixture_server(port: int, *options: str) -> Iterator[str]:
    """The fixture server on 127.0.0.1:`port` with `options` (e.g. "--service-ms", "2"), once it printed
    "ready"; its URL. Killed on the way out, whatever happened."""
    server = subprocess.Popen(
        [sys.executable, str(FIXTURE_SERVER), "--port", str(port), *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "ready"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.kill()
        server.wait()


def start_queue_server(log: Path, *options: str) -> tuple[str, ManagedProcess]:
    """A queue server on a free loopback port with `options` (e.g. "--service-ms", "20"), once it answers
    /metrics; its URL and process (stop it with tests.harness.process.stop_process). Its output goes to `log`."""
    port = free_port()
    proc = start_process("queue-server", [sys.executable, str(QUEUE_SERVER), "--port", str(port), *options], log)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/metrics", deadline_s=30)
    return url, proc


def wrk_post(url: str, body: str, seconds: float, connections: int) -> str:
    """wrk's report of one thread, `connections` in flight (a closed loop), POSTing the JSON `body` to `url` for
    `seconds` (whole seconds: wrk's -d)."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n')
        lua.write('wrk.headers["Content-Type"] = "application/json"\n')
    try:
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s", "-s", lua.name, url]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    finally:
        Path(lua.name).unlink()


def busy_iterations(service_ms: float, tries: int = 15, chunk: int = 200_000) -> int:
    """How many iterations of the queue server's busy loop take `service_ms` on this machine: the fastest of
    `tries` timed chunks (the least disturbed), so that the figure is the loop's own speed, not the load's."""
    sys.path.insert(0, str(ROOT / "tests/sizing"))
    from queue_server import busy

    fastest = math.inf
    for _ in range(tries):
        started = time.perf_counter()
        busy(chunk)
        fastest = min(fastest, time.perf_counter() - started)
    return round(chunk * service_ms / 1000 / fastest)


# A CPU-bound neighbour whose share of the CPU drifts slowly (busy 0-100% of each 100 ms, a sine over PERIOD s):
# what moves a shared runner's throughput over minutes.
HOG = """
import math, time
start = time.monotonic()
while True:
    now = time.monotonic()
    busy = 0.05 * (1 + math.sin(2 * math.pi * (now - start) / {period}))
    while time.monotonic() - now < busy:
        pass
    time.sleep(0.1 - busy)
"""


def start_hogs(count: int, period: float) -> list[subprocess.Popen[bytes]]:
    """`count` CPU-bound neighbours (HOG) whose load drifts over `period` s; the caller kills them."""
    return [subprocess.Popen([sys.executable, "-c", HOG.format(period=period)]) for _ in range(count)]
