"""What the benchmark scripts share (issue 49): the machine's load to print beside each figure, and the
loopback fixture server (tests/load/fixture_server.py) started, awaited and killed in one place."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_SERVER = ROOT / "tests" / "load" / "fixture_server.py"


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
