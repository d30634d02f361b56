"""Start a real server process, wait until it is healthy, stop it by its PID.

Reusable by every test fixture that runs a server (infinity, LiteLLM, Open WebUI, LightRAG):

    proc = start_process("infinity", [exe, "v2", ...], log_dir / "infinity.log", env={...})
    try:
        wait_healthy(proc, f"http://127.0.0.1:{port}/health", deadline_s=180)
        ...
    finally:
        stop_process(proc)

A failure to start raises `ServerStartError` whose message ends with the tail of the server's log,
so a broken environment shows its own words in the pytest output.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx


class ServerStartError(RuntimeError):
    """A server process died or did not become healthy before its deadline."""


@dataclass
class ManagedProcess:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen
    env: dict[str, str] = field(default_factory=dict)  # only the variables added to os.environ

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_process(
    name: str,
    argv: list[str],
    log_path: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    user: int | None = None,
) -> ManagedProcess:
    """Start `argv` in its own process group, stdout and stderr appended to `log_path`; as uid `user` where given
    (PostgreSQL refuses to run as root)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with log_path.open("ab") as log:
        log.write(f"\n=== {name}: {' '.join(argv)}\n".encode())
        log.flush()
        # Own session: the server's worker children can be stopped together through its process group.
        popen = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
            user=user,
        )
    return ManagedProcess(name=name, argv=argv, log_path=log_path, popen=popen, env=dict(env or {}))


def wait_healthy(
    proc: ManagedProcess,
    url: str,
    deadline_s: float,
    ok: Callable[[httpx.Response], bool] = lambda r: r.status_code == 200,
    interval_s: float = 0.5,
) -> None:
    """Poll `url` until `ok(response)`; raise with the log tail if the process exits or time runs out, and stop
    the process whenever this raises (interrupts too): a server that never answered is of no use to the caller.
    The first polls come quickly, then every `interval_s`: a loopback fixture answers within a tenth of a second
    (a fixed half-second wait cost each of the many tests that start one), a real server within tens of seconds."""
    try:
        _poll_healthy(proc, url, deadline_s, ok, interval_s)
    except BaseException:
        stop_process(proc)
        raise


def _poll_healthy(
    proc: ManagedProcess, url: str, deadline_s: float, ok: Callable[[httpx.Response], bool], interval_s: float
) -> None:
    end = time.monotonic() + deadline_s
    last = "no answer yet"
    pause = min(0.02, interval_s)
    with httpx.Client(timeout=5.0) as client:
        while time.monotonic() < end:
            code = proc.popen.poll()
            if code is not None:
                raise ServerStartError(
                    f"{proc.name} exited with code {code} before it was healthy; log {proc.log_path}:\n"
                    f"{proc.log_tail()}"
                )
            try:
                response = client.get(url)
                if ok(response):
                    return
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(pause)
            pause = min(2 * pause, interval_s)
    raise ServerStartError(
        f"{proc.name} not healthy at {url} within {deadline_s:.0f} s (last: {last}); log {proc.log_path}:\n"
        f"{proc.log_tail()}"
    )


def stop_process(proc: ManagedProcess, grace_s: float = 10.0) -> None:
    """SIGTERM the process group that `start_process` created (by the leader's PID), then SIGKILL."""
    if proc.popen.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.popen.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.popen.wait(timeout=grace_s)
