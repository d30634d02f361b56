"""A fake of the Open WebUI 0.12.4 routes `ragbench ingest` uses (settings, knowledge bases, files), on loopback,
shaped as the real server answers (servers.md, shared/recordings/openwebui-0.12.4): for the failures the real
server cannot be made to show on demand — a refused settings update, a server that dies mid-sweep."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from tests.harness.stubs import DROP, JsonStub, Seen, Whole

EMBEDDER_KEY = "sk-fake-embedder-key"


def embedding_form() -> dict[str, Any]:
    """Open WebUI 0.12.4's embedding settings as GET /api/v1/retrieval/embedding answers them (a fresh copy)."""
    return {
        "RAG_EMBEDDING_ENGINE": "openai",
        "RAG_EMBEDDING_MODEL": "m",
        "RAG_EMBEDDING_BATCH_SIZE": 1,
        "ENABLE_ASYNC_EMBEDDING": True,
        "RAG_EMBEDDING_CONCURRENT_REQUESTS": 0,
        "openai_config": {"url": "http://embedder", "key": EMBEDDER_KEY},
    }


class FakeOpenWebUI:
    """`refuse`: a settings update that sets any of these values answers 500, as the real server does when its
    embedding function cannot be built; `die_after_uploads`: the server closes for good once that many files were
    uploaded (0: never), every connection with it; `lose_all`: every file is accepted and processed, and listed
    without its vectors (silently dropped, as a server listing files by another key looks)."""

    def __init__(self, refuse: dict[str, Any] | None = None, die_after_uploads: int = 0, lose_all: bool = False):
        self.embedding = embedding_form()
        self.retrieval: dict[str, Any] = {
            "CHUNK_SIZE": 1000,
            "CHUNK_OVERLAP": 100,
            "TEXT_SPLITTER": "",
            "RELEVANCE_THRESHOLD": 0.0,
        }
        self.knowledge: dict[str, dict[str, Any]] = {}  # id -> {"name", "files": [file ids]}
        self.files: dict[str, dict[str, Any]] = {}
        self.refuse, self.die_after_uploads = refuse or {}, die_after_uploads
        self.dead = False
        self.lose_all = lose_all
        self.on_upload: Callable[[int], object] = lambda count: None  # told each upload's count, as it is made
        self.uploads = 0
        self.status_checks: list[str] = []  # the file id of each GET of a file's processing status, in order
        self.updates = 0  # settings updates answered 200
        self.lock = threading.Lock()
        self.server = JsonStub({}, default=Whole(self._serve))
        self.url = self.server.url

    def settings(self) -> dict[str, Any]:
        return {**self.retrieval, **{k: v for k, v in self.embedding.items() if isinstance(v, int | str)}}

    def die(self) -> None:
        self.dead = True
        threading.Thread(target=self.close, daemon=True).start()

    def close(self) -> None:
        self.server.stop()

    def _serve(self, seen: Seen) -> Any:
        if self.dead:  # gone: the connection drops without an answer
            return DROP
        return self.answer(seen.method, seen.path.split("?")[0], seen.body)

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        with self.lock:
            if (method, path) == ("GET", "/api/version"):
                return 200, {"version": "0.12.4"}
            if (method, path) == ("GET", "/api/v1/retrieval/config"):
                return 200, {"status": True, **self.retrieval}
            if (method, path) == ("GET", "/api/v1/retrieval/embedding"):
                return 200, {"status": True, **self.embedding}
            if method == "POST" and path in ("/api/v1/retrieval/embedding/update", "/api/v1/retrieval/config/update"):
                return self._update(path, json.loads(body))
            if (method, path) == ("GET", "/api/v1/knowledge/"):
                items = [{"id": k, "name": v["name"]} for k, v in self.knowledge.items()]
                return 200, {"items": items, "total": len(items)}
            if (method, path) == ("POST", "/api/v1/knowledge/create"):
                made = str(uuid.uuid4())
                self.knowledge[made] = {"name": json.loads(body)["name"], "files": []}
                return 200, {"id": made}
            if (method, path) == ("POST", "/api/v1/files/"):
                return self._upload(body)
            return self._by_id(method, path, body)

    def _update(self, path: str, form: dict[str, Any]) -> tuple[int, Any]:
        if any(form.get(k) == v for k, v in self.refuse.items()):
            return 500, {"detail": "Error updating embedding configuration"}
        if path.endswith("embedding/update"):
            defaults = {"RAG_EMBEDDING_BATCH_SIZE": 1, "RAG_EMBEDDING_CONCURRENT_REQUESTS": 0}
            self.embedding.update({**defaults, **form})
        else:
            self.retrieval.update(form)
        self.updates += 1
        return 200, {"status": True}

    def _upload(self, body: bytes) -> tuple[int, Any]:
        name = re.search(rb'filename="([^"]+)"', body)
        content = re.search(rb'filename="[^"]*"\r\n(?:[^\r\n]+\r\n)*\r\n(.*?)\r\n--', body, re.S)
        if content is not None and not content.group(1).strip():  # as 0.12.4 answers a file with no text
            return 400, {"detail": "The content provided is empty. Please ensure that there is text or data present."}
        made = str(uuid.uuid4())
        vectors = None if self.lose_all else "h"
        meta = {"name": name.group(1).decode() if name else "?"}
        if content is not None:  # as 0.12.4 keeps it: SHA-256 of the bytes (a file reused by name is matched on it)
            meta["file_hash"] = hashlib.sha256(content.group(1)).hexdigest()
        self.files[made] = {"id": made, "meta": meta, "hash": vectors}
        self.uploads += 1
        self.on_upload(self.uploads)
        if self.die_after_uploads and self.uploads >= self.die_after_uploads:
            self.die()
        return 200, {"id": made}

    def _by_id(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        parts = path.strip("/").split("/")  # api v1 files|knowledge ID ...
        if len(parts) < 4:
            return 404, {"detail": "Not Found"}
        kind, item = parts[2], parts[3]
        if kind == "files" and parts[4:] == ["process", "status"]:
            self.status_checks.append(item)
            return 200, {"status": "completed"}
        if kind == "files" and method == "DELETE":
            return (200, True) if self.files.pop(item, None) else (404, {"detail": "Not Found"})
        if kind == "files":
            return 200, self.files[item]
        if kind == "knowledge" and parts[4:] == ["file", "add"]:
            self.knowledge[item]["files"].append(json.loads(body)["file_id"])
            return 200, {"id": item}
        if kind == "knowledge" and parts[4:] == ["files"]:
            items = [self.files[f] for f in self.knowledge[item]["files"] if f in self.files]
            return 200, {"items": items, "total": len(items)}
        if kind == "knowledge" and parts[4:] == ["delete"]:
            return (200, True) if self.knowledge.pop(item, None) else (404, {"detail": "Not Found"})
        return 404, {"detail": "Not Found"}
