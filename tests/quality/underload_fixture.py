"""A TEI-shaped loopback embedder (no model) that degrades under load, for `quality --background` tests.

- `/embed`: a hashed bag of words (crc32 of each lower-cased word into DIM buckets, L2-normalised), answered
  `service_ms` after the request arrived; when more than `max_inflight` requests are in flight (this one included),
  every input is cut to its first `truncate_words` words first — TEI's `--auto-truncate` under batch-token pressure,
  made deterministic;
- `/info`: a TEI-shaped model description; anything else 404.
`truncated` counts the requests that were cut, so a test can say the effect came from the load.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DIM = 1024
QUERIES = 40
FILLER = "please find the passage in the collection that talks about the following subject".split()


def write_long_queries(root: Path, queries: int = QUERIES) -> Path:
    """A JSONL Q&A set whose every query is 70 words of filler the documents do not hold, then its document's two
    own words: cut to 64 words, every query keeps only the filler, and ranks nothing above anything else."""
    docs = [{"_id": f"d{i}", "text": f"alpha{i} beta{i} gamma{i} shared words here"} for i in range(queries)]
    filler = " ".join(FILLER[j % len(FILLER)] for j in range(70))
    qa = [{"id": f"q{i}", "query": f"{filler} alpha{i} beta{i}", "relevant": [f"d{i}"]} for i in range(queries)]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qa))
    return root


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * DIM
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % DIM] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


class UnderloadServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, max_inflight: int, truncate_words: int = 64, service_ms: float = 40.0):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.max_inflight, self.truncate_words, self.service_s = max_inflight, truncate_words, service_ms / 1000
        self.lock = threading.Lock()
        self.inflight = 0
        self.requests = 0
        self.truncated = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> UnderloadServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def embed(self, texts: list[str]) -> list[list[float]]:
        arrived = time.monotonic()
        with self.lock:
            self.inflight += 1
            self.requests += 1
            crowded = self.inflight > self.max_inflight
            self.truncated += crowded
        try:
            if crowded:
                texts = [" ".join(t.split()[: self.truncate_words]) for t in texts]
            vectors = [bag_of_words(t) for t in texts]
            time.sleep(max(0.0, arrived + self.service_s - time.monotonic()))
            return vectors
        finally:
            with self.lock:
                self.inflight -= 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the load client and httpx expect of TEI
    server: UnderloadServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, body: Any) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path == "/info":
            info = {
                "model_id": "underload-bag-of-words",
                "model_dtype": "float32",
                "model_type": {"embedding": {"pooling": "mean"}},
                "max_client_batch_size": 32,
                "max_input_length": 512,
                "version": "1.9.3",
            }
            self._json(200, info)
        else:
            self._json(404, {"error": "not found", "error_type": "NotFound"})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if self.path != "/embed":
            self._json(404, {"error": "not found", "error_type": "NotFound"})
            return
        inputs = body.get("inputs")
        self._json(200, self.server.embed([inputs] if isinstance(inputs, str) else list(inputs)))
