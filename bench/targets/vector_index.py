"""Indexes on disk in bounded memory, whatever the corpus size: corpus vectors with exact top-k search, and BM25.

Vectors are appended in batches to a file under `$RAGBENCH_CACHE/indexes/` (float32, or float16 for half the
disk), so an ingest never holds the whole corpus. The file has no name: it is gone when the index is closed or
the process ends, even killed, so an interrupted run of a large corpus leaves no gigabytes behind.

Search reads the file through `np.memmap` windows of a few thousand documents and keeps a running top k per
query: memory is queries × (window + k) scores, never queries × corpus. Each window's scores are float32
products `queries @ window.T`; the order is score descending, ties by corpus position ascending, for every window
size. BLAS sums a product over the dimensions in blocks that depend on the CPU and on the matrix shape, so a
window's score can differ from the whole-matrix product's in its last bits (a few float32 ulps, about 1e-7
relative): the chunked search equals exact search over the matrix in its ranking up to documents whose scores
lie within that rounding of each other, and in its scores to within it. Where every product is exact (integer-
valued vectors, as a test uses) no summation order changes a bit: the two are then equal bit for bit, ties
included, on every CPU.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench.core.errors import UserError
from bench.endpoints.cache import default_cache_dir

DTYPES = ("float32", "float16")
# Scores held per window: queries × rows ≤ this many float32 (64 MiB), a few copies of it at most at a time.
WINDOW_SCORES = 1 << 24
MIN_WINDOW_ROWS = 256


@dataclass(frozen=True)
class TopK:
    """Each query's best documents, best first: corpus positions and their float32 scores."""

    positions: np.ndarray  # (queries, k) int64
    scores: np.ndarray  # (queries, k) float32


def scratch_dir() -> Path:
    """Where indexes of a run live on disk: beside the embedding cache, so one setting moves both."""
    directory = default_cache_dir() / "indexes"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(
            f"index folder {directory}: {exc.strerror or exc}; set RAGBENCH_CACHE to a writable folder"
        ) from None
    return directory


class VectorIndex:
    """Append-only on-disk vectors; `search` is exact inner-product top k (cosine for normalised vectors)."""

    def __init__(self, dtype: str = "float32", window_rows: int | None = None):
        if dtype not in DTYPES:
            raise UserError(f"vector dtype {dtype!r}: one of {', '.join(DTYPES)}")
        self.dtype = np.dtype(dtype)
        self.window_rows = window_rows  # None: sized by WINDOW_SCORES and the number of queries
        self.dim = 0
        self.rows = 0
        self._file: IO[bytes] | None = None

    def __len__(self) -> int:
        return self.rows

    def append(self, vectors: np.ndarray) -> None:
        """Add a batch of rows at the end, in corpus order."""
        vectors = np.asarray(vectors)
        if vectors.ndim != 2:
            raise ValueError(f"vectors must be a matrix, got shape {vectors.shape}")
        if not len(vectors):
            return
        if not np.isfinite(vectors).all():  # a NaN has no place in a ranking: refused, never ranked somewhere
            raise ValueError("vectors hold NaN or infinite values")
        if self._file is None:
            self.dim = vectors.shape[1]
            self._file = tempfile.TemporaryFile(  # noqa: SIM115 (kept open across calls; closed by close())
                dir=scratch_dir(), prefix="vectors-"
            )
        if vectors.shape[1] != self.dim:
            raise ValueError(f"vectors of {vectors.shape[1]} dimensions appended to an index of {self.dim}")
        self._file.write(np.ascontiguousarray(vectors, dtype=self.dtype).tobytes())
        self.rows += len(vectors)

    def _windows(self, queries: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float32 rows) over the corpus, each window mapped only while it is used."""
        if self._file is None:
            return
        self._file.flush()
        step = self.window_rows or max(MIN_WINDOW_ROWS, WINDOW_SCORES // max(queries, 1))
        row_bytes = self.dim * self.dtype.itemsize
        for start in range(0, self.rows, step):
            count = min(step, self.rows - start)
            window = np.memmap(self._file, self.dtype, "r", offset=start * row_bytes, shape=(count, self.dim))
            yield start, (window if self.dtype == np.float32 else window.astype(np.float32))
            del window  # unmapped: its pages stop counting in this process's memory

    def search(self, queries: np.ndarray, k: int) -> TopK:
        """The k best rows for each query; k is capped at the number of rows."""
        queries = _checked(queries)
        k = min(k, self.rows)
        positions = np.zeros((len(queries), 0), dtype=np.int64)
        scores = np.zeros((len(queries), 0), dtype=np.float32)
        for start, window in self._windows(len(queries)):
            window_scores = queries @ window.T
            rows, columns = np.nonzero(window_scores >= _floor(scores, window_scores, k)[:, None])
            keep = min(k, scores.shape[1] + len(window))  # the same for every query
            positions, scores = _merge(positions, scores, rows, columns + start, window_scores[rows, columns], keep)
        return TopK(positions, scores)

    def scores_at(self, queries: np.ndarray, query_rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The scores of given (query, corpus position) pairs, computed as `search` computes them (the same window
        products for the same queries; within float32 rounding of them for other shapes, as the module says)."""
        queries = _checked(queries)
        out = np.zeros(len(positions), dtype=np.float32)
        order = np.argsort(positions, kind="stable")
        sorted_positions = positions[order]
        for start, window in self._windows(len(queries)):
            lo, hi = np.searchsorted(sorted_positions, [start, start + len(window)])
            if lo == hi:
                continue
            pairs = order[lo:hi]
            window_scores = queries @ window.T
            out[pairs] = window_scores[query_rows[pairs], positions[pairs] - start]
        return out

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _checked(queries: np.ndarray) -> np.ndarray:
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    if not np.isfinite(queries).all():
        raise ValueError("query vectors hold NaN or infinite values")
    return queries


def _floor(best: np.ndarray, window_scores: np.ndarray, k: int) -> np.ndarray:
    """Per query, a score below which no document of the window can enter the top k (ties at it can)."""
    if k and best.shape[1] == k:  # the running k-th best only rises
        return best[:, -1]
    if window_scores.shape[1] > k:
        return np.partition(window_scores, -k, axis=1)[:, -k]
    return np.full(len(window_scores), -np.inf, dtype=np.float32)


def _merge(
    positions: np.ndarray,
    scores: np.ndarray,
    rows: np.ndarray,
    new_positions: np.ndarray,
    new_scores: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each query's k best of its running best and its new candidates: score descending, ties by position ascending.

    Every candidate at or above the floor is kept, boundary ties included, so the order (row, -score, position) and
    each row's first k are exact whatever the windows were.
    """
    queries, held = scores.shape
    all_rows = np.concatenate([np.repeat(np.arange(queries), held), rows])
    all_positions = np.concatenate([positions.ravel(), new_positions])
    all_scores = np.concatenate([scores.ravel(), new_scores])
    order = np.lexsort((all_positions, -all_scores, all_rows))
    all_rows = all_rows[order]
    rank = np.arange(len(all_rows)) - np.searchsorted(all_rows, all_rows)  # place within its query's candidates
    chosen = order[rank < k]
    return all_positions[chosen].reshape(queries, k), all_scores[chosen].reshape(queries, k)


def memory_mapped_bm25(retriever: Any) -> Any:
    """The same bm25s index read back memory-mapped: its score arrays stay on disk, paged in as queries touch them.

    bm25s saves the arrays as .npy files and `load(mmap=True)` maps them; the folder is removed at once (the
    mappings keep the data until the index is dropped), so nothing is left behind.
    """
    import bm25s

    directory = Path(tempfile.mkdtemp(dir=scratch_dir(), prefix="bm25-"))
    try:
        retriever.save(directory, show_progress=False)
        return bm25s.BM25.load(directory, mmap=True, show_progress=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
