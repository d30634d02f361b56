"""On-disk embedding cache keyed by model fingerprint and exact text, so a rerun never encodes twice."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.core.errors import UserError
from bench.core.http import HttpStatusError
from bench.endpoints.base import ServedIdentity

# The identity probe (`probe_vectors`), sent to an HTTP endpoint once per run: a short sentence and texts long
# enough to cross the input limit of the served model, so that the vectors it gets back (part of the cache key,
# `served_key`) change with the model, its normalisation and wherever the server truncates.
PROBE_TEXT = "ragbench cache probe: what the served model makes of one fixed sentence."
# Without a limit the server tells: beyond the usual ones (512, 8,192 and 32,768 tokens; a word is a token at least).
PROBE_WORDS = (600, 9_000, 33_000)
# Words of the long probes by topic: the topic changes at words 16, 32, 64, ... (`probe_text`).
_TOPICS = (
    [
        "river",
        "bridge",
        "stone",
        "valley",
        "mountain",
        "forest",
        "meadow",
        "lake",
        "cliff",
        "canyon",
        "island",
        "harbour",
    ],
    [
        "protein",
        "enzyme",
        "molecule",
        "membrane",
        "genome",
        "cell",
        "tissue",
        "receptor",
        "antibody",
        "neuron",
        "plasma",
        "virus",
    ],
    [
        "violin",
        "guitar",
        "melody",
        "rhythm",
        "chorus",
        "opera",
        "drum",
        "symphony",
        "tempo",
        "harmony",
        "piano",
        "trumpet",
    ],
    [
        "court",
        "judge",
        "verdict",
        "contract",
        "statute",
        "appeal",
        "witness",
        "lawyer",
        "tribunal",
        "clause",
        "evidence",
        "jury",
    ],
    ["bread", "butter", "garlic", "onion", "pepper", "oven", "soup", "noodle", "cheese", "basil", "lemon", "honey"],
    [
        "market",
        "bond",
        "equity",
        "dividend",
        "invoice",
        "budget",
        "tax",
        "loan",
        "credit",
        "profit",
        "auction",
        "ledger",
    ],
    [
        "football",
        "tennis",
        "sprint",
        "marathon",
        "referee",
        "goal",
        "stadium",
        "racket",
        "medal",
        "league",
        "coach",
        "swim",
    ],
    [
        "galaxy",
        "planet",
        "comet",
        "orbit",
        "telescope",
        "nebula",
        "asteroid",
        "quasar",
        "eclipse",
        "rocket",
        "crater",
        "star",
    ],
)


def probe_text(words: int) -> str:
    """`words` words whose topic changes at words 16, 32, 64, 128, ...: a server that cuts the text anywhere
    drops a part as long as the part it keeps, of other topics, so the vector it gives differs clearly (a
    repeated sentence would pool to nearly the same vector however it is cut)."""
    out = []
    for i in range(words):
        topic = _TOPICS[max(0, i.bit_length() - 4) % len(_TOPICS)]
        out.append(topic[(i * 7) % len(topic)])
    return " ".join(out)


def probe_texts(limit: int | None) -> list[str]:
    """The probe texts: the short sentence and, where the server tells its input `limit` (tokens), one text
    longer than it (TEI /info's max_input_length), else one longer than each of the usual limits."""
    lengths = (limit + 16,) if limit else PROBE_WORDS
    return [PROBE_TEXT, *(probe_text(n) for n in lengths)]


def probe_vectors(embed: Callable[[list[str]], np.ndarray], limit: int | None = None) -> np.ndarray:
    """The probe texts' vectors, in one request. A server that answers an error status (one that refuses
    inputs that long: TEI 413/422, vLLM and OpenAI 400) is asked again without the longest text; how many it
    took is part of the vectors' shape, so of the key. The short sentence's error is raised."""
    texts = probe_texts(limit)
    while True:
        try:
            return embed(texts)
        except HttpStatusError:
            if len(texts) == 1:
                raise
            texts = texts[:-1]


def served_key(identity: ServedIdentity, probe: np.ndarray) -> str:
    """The cache key of a served model: what the endpoint says it serves (model, weights, dtype, pooling,
    input limit, request options) and the vectors it gives the probe texts (`probe_vectors`), to 3 decimals
    (float noise between runs does not matter; another model, pooling, normalisation, or truncation anywhere
    below the probes' length does: the long probe's vector, with its norm, is another). The key never holds
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

    def clear(self) -> None:
        """Forget every vector of this model (they no longer match what it serves)."""
        try:
            with self._db:
                self._db.execute("DELETE FROM vectors")
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def close(self) -> None:
        self._db.close()
