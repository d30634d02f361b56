"""A trivial TEI-shaped endpoint on nginx (../shared/servers.md): POST /embed answers a 4-float vector."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CONFIG = """worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  keepalive_requests 1000000;
  server {{
    listen 127.0.0.1:{port};
    location = /embed {{ default_type application/json; return 200 '[[0.5,0.5,0.5,0.5]]'; }}
  }}
}}
"""


@contextmanager
def nginx(port: int = 18080) -> Iterator[str]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    with tempfile.TemporaryDirectory(prefix="ragbench-nginx-") as tmp:
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(CONFIG.format(tmp=tmp, port=port))
        process = subprocess.Popen(
            [binary, "-c", str(conf), "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    urllib.request.urlopen(urllib.request.Request(f"{url}/embed", data=b"{}"), timeout=1).read()
                    break
                except OSError as exc:
                    if time.monotonic() > deadline or process.poll() is not None:
                        log = Path(tmp) / "error.log"
                        raise RuntimeError(f"nginx did not start: {log.read_text() if log.exists() else ''}") from exc
                    time.sleep(0.1)
            yield url
        finally:
            process.terminate()
            process.wait(10)
