"""Headless Chromium driven over the Chrome DevTools protocol on a pipe (`--remote-debugging-pipe`).

Why a pipe and not Playwright or a WebSocket: the protocol over fds 3/4 is NUL-separated JSON, so the
standard library is enough; no browser download, no driver whose version must match the browser, and no
port that another process could take. The browser is Debian's `chromium` (scripts/test.sh installs it).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Chromium's own background traffic (updates, safe browsing, metrics) off; a dead proxy as a backstop,
# so a report that tried to fetch something could not reach anything even if the check below missed it.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--metrics-recording-only",
    "--proxy-server=http://127.0.0.1:9",
    "--window-size=1200,1600",
    "--remote-debugging-pipe",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageVisit:
    """What happened while a page loaded: every request, every console message and error, its images."""

    requests: list[str] = field(default_factory=list)  # URLs the page asked for (data: URLs are not requests)
    console_errors: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)  # src (start), decoded, naturalWidth, naturalHeight
    title: str = ""
    screenshot: bytes = b""


class Chromium:
    def __init__(self, timeout_s: float = 60.0):
        path = chromium_path()
        if path is None:
            raise RuntimeError("chromium not found: `apt-get install -y chromium` (scripts/test.sh does)")
        self.timeout_s = timeout_s
        self._profile = tempfile.TemporaryDirectory(prefix="ragbench-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def on_fds_3_and_4() -> None:  # in the child, before exec: the protocol's fixed descriptors
            read_end, write_end = (
                fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10),
                fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10),
            )
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self._process = subprocess.Popen(
            [path, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            close_fds=False,
            preexec_fn=on_fds_3_and_4,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer; events that arrive meanwhile are kept in `events`."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._receive()
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_browser], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"chromium sent nothing for {self.timeout_s:.0f} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited: {self._process.stderr.read().decode(errors='replace')[-2000:]}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def visit(self, path: Path) -> PageVisit:
        """Open a local file in a fresh tab, let it load, decode its images, take a screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        first_event = len(self.events)
        navigation = self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        if navigation.get("errorText"):
            raise RuntimeError(f"{path}: {navigation['errorText']}")
        self.wait_for("Page.loadEventFired", session)
        images = self.send(
            "Runtime.evaluate",
            {"expression": _DECODE_IMAGES, "awaitPromise": True, "returnByValue": True},
            session=session,
        )["result"]["value"]
        title = self.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=session)[
            "result"
        ]["value"]
        shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        visit = PageVisit(images=images, title=title, screenshot=base64.b64decode(shot))
        for event in self.events[first_event:]:
            if event.get("sessionId") != session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Network.requestWillBeSent" and not params["request"]["url"].startswith("data:"):
                visit.requests.append(params["request"]["url"])
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert", "warning"):
                visit.console_errors.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
                )
            elif method == "Runtime.exceptionThrown":
                visit.console_errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                visit.console_errors.append(params["entry"]["text"])
        self.send("Target.closeTarget", {"targetId": target})
        return visit

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._process.stderr.close()
        self._profile.cleanup()


_DECODE_IMAGES = (
    "Promise.all(Array.from(document.images).map(img => img.decode().then(\n"
    "    () => ({src: img.src.slice(0, 40), decoded: true, "
    "naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight}),\n"
    "    error => ({src: img.src.slice(0, 40), decoded: false, "
    "naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,\n"
    "               error: String(error)}))))"
)
