"""On-disk embedding cache keyed by model fingerprint and exact text, so a rerun never encodes twice."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import numpy as np

from bench.core.errors import UserError

# Sent to an HTTP endpoint once per run: the vector it gets back is part of the cache key (`served_key`).
PROBE_TEXT = "ragbench cache probe: what the served model makes of one fixed sentence."


def served_key(identity: dict[str, object], probe: np.ndarray) -> str:
    """The cache key of a served model: what the endpoint says it serves (model, weights, dtype, pooling,
    input limit, request options) and the vector it gives PROBE_TEXT, to 3 decimals (float noise between
    runs does not matter; another model, pooling, normalisation or truncation does). The key never holds
    the URL: the same model behind another address shares its vectors."""
    h = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    rounded = np.round(np.asarray(probe, dtype=np.float64), 3) + 0.0  # + 0.0: -0.0 and 0.0 hash alike
    h.update(str(rounded.shape).encode())
    h.update(rounded.astype("<f8").tobytes())
    return f"served-{h.hexdigest()[:20]}"


def default_cache_dir() -> Path:
    return Path(os.environ.get("RAGBENCH_CACHE") or Path.home() / ".cache" / "ragbench")


class EmbeddingCache:
    """One SQLite file per model: text sha256 -> float32 vector bytes.

    SQLite (standard library) gives atomic, crash-safe writes and fast lookups by key;
    storing only hashes keeps corpus text out of the cache.
    """

    def __init__(self, model_key: str, cache_dir: Path | None = None):
        directory = (cache_dir or default_cache_dir()) / "embeddings"
        self.path = directory / f"{model_key}.sqlite"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path)
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
            self._db.execute(
                "SELECT key, vector FROM vectors LIMIT 1"
            ).fetchall()  # a table of another shape fails here
        except (OSError, sqlite3.Error) as exc:
            raise self._unusable(exc) from None

    def _unusable(self, exc: Exception) -> UserError:
        if isinstance(exc, OSError):
            where, reason = exc.filename or self.path, exc.strerror or str(exc)
        else:
            where, reason = self.path, str(exc)
        return UserError(
            f"embedding cache {where}: unusable ({reason}); set RAGBENCH_CACHE to a writable "
            "folder, or move that file away"
        )

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8")).digest()

    def get_many(self, texts: list[str]) -> dict[int, np.ndarray]:
        """Vectors found for `texts`, by position."""
        found: dict[int, np.ndarray] = {}
        keys = [self.key(t) for t in texts]
        by_key: dict[bytes, list[int]] = {}
        for i, k in enumerate(keys):
            by_key.setdefault(k, []).append(i)
        unique = list(by_key)
        try:
            for start in range(0, len(unique), 500):  # SQLite's bound-parameter limit
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for k, blob in self._db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    for i in by_key[k]:
                        found[i] = vector
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        return found

    def put_many(self, texts: list[str], vectors: np.ndarray) -> None:
        rows = [(self.key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def close(self) -> None:
        self._db.close()
