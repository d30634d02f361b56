"""Read a Chroma collection through chromadb, for benchmarks/store_recall_chroma.py (issue 47). Run with Open
WebUI 0.12.4's interpreter (chromadb 1.5.9, numpy): it imports nothing of ragbench. Writes an .npz: the collection's
`ids` and `vectors` (`vectors`), or the ids its HNSW index answers for each query vector, k a query, as Open WebUI's
own `collection.query` asks (`search`), with the ef_search it answered under.

    python store_recall_dump.py vectors PATH COLLECTION OUT.npz
    python store_recall_dump.py set-ef PATH COLLECTION EF
    python store_recall_dump.py search PATH COLLECTION QUERIES.npy K OUT.npz

Chroma keeps `ef_search` with the collection and reads it when a process loads the index: `set-ef` writes it in a
process of its own, and the next `search` (a fresh process) answers under it; a process that already loaded the
index keeps the ef it loaded with (checked: modify() then query() in one process changed nothing, a fresh process
did). PATH is a copy of the app's `vector_db/` (the app's own files are the app's while it runs).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def chroma_collection(path: str, name: str) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=path).get_collection(name)


def dump_vectors(path: str, name: str, out: str) -> None:
    ids: list[str] = []
    vectors: list[Any] = []
    collection = chroma_collection(path, name)
    for offset in range(0, collection.count(), 5000):
        page = collection.get(include=["embeddings"], limit=5000, offset=offset)
        ids += page["ids"]
        vectors += list(page["embeddings"])
    np.savez(out, ids=np.array(ids), vectors=np.array(vectors, dtype=np.float32))


def search(path: str, name: str, queries: str, k: int, out: str) -> None:
    collection = chroma_collection(path, name)
    found = collection.query(query_embeddings=np.load(queries), n_results=k, include=[])["ids"]
    width = max([len(row) for row in found] + [1])
    padded = [list(row) + [""] * (width - len(row)) for row in found]  # "" marks a query answered short of k
    np.savez(out, found=np.array(padded), ef=np.array(collection.configuration["hnsw"]["ef_search"]))


def main(argv: list[str]) -> None:
    command, path, name = argv[:3]
    if command == "vectors":
        dump_vectors(path, name, argv[3])
    elif command == "set-ef":
        chroma_collection(path, name).modify(configuration={"hnsw": {"ef_search": int(argv[3])}})
    else:
        search(path, name, argv[3], int(argv[4]), argv[5])


if __name__ == "__main__":
    main(sys.argv[1:])
