"""Feature-hashed word-count vectors: the embedding of the loopback stand-in embedders (benchmarks/grow_openwebui.py,
tests/sizing/queue_server.py's OpenAI route). Lexical, deterministic and fast, so an app's retrieval through them
still finds the documents that share a query's words, with no model on this machine's CPU."""

from __future__ import annotations

import math
import re
import zlib

DIMS = 128
WORD = re.compile(r"\w+")


def hash_vector(text: str) -> list[float]:
    """The text's words counted into DIMS buckets by crc32, L2-normalised (all zeros for a text without words)."""
    vector = [0.0] * DIMS
    for word in WORD.findall(text.lower()):
        vector[zlib.crc32(word.encode()) % DIMS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]
