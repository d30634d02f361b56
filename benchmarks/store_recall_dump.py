"""Read a vector store's collection through the store's own client, for benchmarks/store_recall.py (issue 47).
Run with Open WebUI 0.12.4's interpreter (chromadb, numpy; pymilvus and milvus-lite on its PYTHONPATH for Milvus
Lite): it imports nothing of ragbench. Writes an .npz: the collection's `ids` and `vectors` (`vectors` command), or
the ids the store's index answers for each query vector (`search` command), k a query, as Open WebUI's own
`collection.query` / `client.search` asks.

    python store_recall_dump.py vectors STORE PATH COLLECTION OUT.npz
    python store_recall_dump.py set-ef chroma PATH COLLECTION EF
    python store_recall_dump.py search STORE PATH COLLECTION QUERIES.npy K EF OUT.npz

Chroma keeps `ef_search` with the collection and reads it when a process loads the index: `set-ef` writes it in a
process of its own, and the next `search` (a fresh process) answers under it; a process that already loaded the
index keeps the ef it loaded with (checked: modify() then query() in one process changed nothing). Milvus takes
`ef` with each search. PATH is a copy of the store's files (the app's own are the app's while it runs).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def chroma_collection(path: str, name: str) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=path).get_collection(name)


def milvus_client(path: str, name: str) -> Any:
    from pymilvus import MilvusClient

    client = MilvusClient(path)
    client.load_collection(name)  # a collection opened from its files is 'released' until loaded
    return client


def dump_vectors(store: str, path: str, name: str, out: str) -> None:
    ids: list[str] = []
    vectors: list[Any] = []
    if store == "chroma":
        collection = chroma_collection(path, name)
        for offset in range(0, collection.count(), 5000):
            page = collection.get(include=["embeddings"], limit=5000, offset=offset)
            ids += page["ids"]
            vectors += list(page["embeddings"])
    else:
        rows = milvus_client(path, name).query_iterator(name, filter='id != ""', output_fields=["id", "vector"])
        while batch := rows.next():
            ids += [str(row["id"]) for row in batch]
            vectors += [row["vector"] for row in batch]
        rows.close()
    np.savez(out, ids=np.array(ids), vectors=np.array(vectors, dtype=np.float32))


def search(store: str, path: str, name: str, queries: str, k: int, ef: int, out: str) -> None:
    vectors = np.load(queries)
    if store == "chroma":
        collection = chroma_collection(path, name)
        found = collection.query(query_embeddings=vectors, n_results=k, include=[])["ids"]
        setting = collection.configuration["hnsw"]["ef_search"]
    else:
        client = milvus_client(path, name)
        params = {"metric_type": "COSINE", "params": {"ef": ef}}
        answers = client.search(name, data=vectors.tolist(), limit=k, search_params=params, output_fields=["id"])
        found = [[str(hit["id"]) for hit in hits] for hits in answers]
        setting = ef
    width = max([len(row) for row in found] + [1])
    padded = [list(row) + [""] * (width - len(row)) for row in found]  # "" marks a query answered short of k
    np.savez(out, found=np.array(padded), ef=np.array(setting))


def main(argv: list[str]) -> None:
    command, store, path, name = argv[:4]
    if command == "vectors":
        dump_vectors(store, path, name, argv[4])
    elif command == "set-ef":
        chroma_collection(path, name).modify(configuration={"hnsw": {"ef_search": int(argv[4])}})
    else:
        search(store, path, name, argv[4], int(argv[5]), int(argv[6]), argv[7])


if __name__ == "__main__":
    main(sys.argv[1:])
