"""Why Open WebUI 0.12.4 on Milvus Lite 3.2.2 ingests a few documents a minute (issue 47): the Milvus calls one
file upload into a knowledge base makes, each timed, as the knowledge base grows. Run with Open WebUI's interpreter
and the Milvus extra (scripts/envs/milvus.sh) on its PYTHONPATH, a fresh folder as DIR:

    PYTHONPATH=~/.cache/ragbench/envs/milvus-lite-3.2.2/openwebui-extra \\
      ~/.cache/ragbench/envs/open-webui-0.12.4/bin/python benchmarks/milvus_lite_ops.py DIR [--files 80] [--rows 116]
    # MILVUS_LITE_MEMTABLE_MEMORY_LIMIT_BYTES=2097152 (read by milvus_lite at import): flush at 2 MB, not 128 MB

Per file, what Open WebUI's save_docs_to_vector_db and its Milvus client do (dbs/milvus.py): the knowledge base's
duplicate check (`query_iterator` with `metadata["hash"] == …`), the file's own collection created (schema with the
BM25 function, HNSW + sparse index, load), the file's rows inserted there and into the knowledge base; then one
vector search of the base (limit 10). Prints one line per 10 files: rows in the base, seconds per call, and the
base's recall@10 as the live client searches it (20 queries; ef 10, 40, 100; exact top 10 by cosine over the rows
inserted, store_recall.vector_recall): the index itself, in the process that wrote it, as Open WebUI's searches see
it. Texts are 25 words drawn from 2,000 made-up ones, embedded by the hash stand-in (tests/harness/hash_embedder).
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from pymilvus import DataType, Function, FunctionType, MilvusClient

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
from store_recall import vector_recall  # noqa: E402  (numpy only: runs under Open WebUI's interpreter)

from tests.harness.hash_embedder import hash_vector  # noqa: E402  (stdlib only)

WORDS = [f"w{i}" for i in range(2000)]


def create(client: Any, name: str, dim: int) -> None:
    """A collection as Open WebUI 0.12.4 makes one (_create_unloaded_collection, then load_collection)."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field(field_name="id", datatype=DataType.VARCHAR, is_primary=True, max_length=65535)
    schema.add_field(field_name="vector", datatype=DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field(field_name="text", datatype=DataType.VARCHAR, max_length=65535, enable_analyzer=True)
    schema.add_field(field_name="sparse", datatype=DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function("text_bm25", FunctionType.BM25, input_field_names=["text"], output_field_names=["sparse"])
    )
    schema.add_field(field_name="metadata", datatype=DataType.JSON)
    index = client.prepare_index_params()
    index.add_index(
        field_name="vector", index_type="HNSW", metric_type="COSINE", params={"M": 16, "efConstruction": 100}
    )
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection(collection_name=name, schema=schema)
    client.create_index(collection_name=name, index_params=index)
    client.load_collection(name)


class RowMetadata(TypedDict):
    file_id: str
    hash: str  # the file's content hash: what Open WebUI's duplicate check filters on
    name: str
    source: str


class Row(TypedDict):
    """A chunk's row as Open WebUI inserts it into Milvus."""

    id: str
    vector: list[float]
    text: str
    metadata: RowMetadata


def rows_of(file: int, count: int, rng: np.random.Generator) -> list[Row]:
    digest = hashlib.sha256(str(file).encode()).hexdigest()
    texts = [" ".join(rng.choice(WORDS, 25)) for _ in range(count)]
    return [
        {
            "id": f"{file}-{i}",
            "vector": hash_vector(text),
            "text": text,
            "metadata": {"file_id": str(file), "hash": digest, "name": f"doc-{file}.txt", "source": f"doc-{file}.txt"},
        }
        for i, text in enumerate(texts)
    ]


def live_recall(client: Any, ids: list[str], vectors: list[list[float]], queries: np.ndarray) -> str:
    """recall@10 of the base as the live client's search answers it, at ef 10, 40, 100."""
    found = []
    for ef in (10, 40, 100):
        params = {"metric_type": "COSINE", "params": {"ef": ef}}
        hits = client.search("kb", data=queries.tolist(), limit=10, anns_field="vector", search_params=params)
        answers = [[str(hit["id"]) for hit in row] for row in hits]
        recall, _ = vector_recall(ids, np.array(vectors, dtype=np.float32), queries, answers, 10)
        found.append(f"ef {ef} {recall:.3f}")
    return "recall@10 " + ", ".join(found)


def duplicate_check(client: Any, name: str, digest: str) -> int:
    """Open WebUI's has_duplicate_content: every row whose metadata hash is the file's, through query_iterator."""
    rows = client.query_iterator(collection_name=name, filter=f'metadata["hash"] == "{digest}"', output_fields=["id"])
    found = 0
    while batch := rows.next():
        found += len(batch)
    rows.close()
    return found


def upload(client: Any, file: int, rows: list[Row], spent: dict[str, float]) -> None:
    """One file into the knowledge base, as Open WebUI does it, each Milvus call timed into `spent`."""
    steps = (
        ("dup-check", lambda: duplicate_check(client, "kb", rows[0]["metadata"]["hash"])),
        ("file-collection", lambda: create(client, f"file_{file}", 128)),
        ("file-insert", lambda: client.insert(collection_name=f"file_{file}", data=rows)),
        ("kb-insert", lambda: client.insert(collection_name="kb", data=rows)),
        ("kb-search", lambda: client.search("kb", data=[rows[0]["vector"]], limit=10, anns_field="vector")),
    )
    for step, call in steps:
        started = time.perf_counter()
        call()
        spent[step] = spent.get(step, 0.0) + time.perf_counter() - started


def main(folder: str, files: int, per_file: int) -> None:
    client = MilvusClient(f"{folder}/milvus.db")
    rng = np.random.default_rng(0)
    create(client, "kb", 128)
    spent: dict[str, float] = {}
    ids: list[str] = []
    vectors: list[list[float]] = []
    queries = np.array([hash_vector(" ".join(rng.choice(WORDS, 5))) for _ in range(20)], dtype=np.float32)
    for file in range(files):
        rows = rows_of(file, per_file, rng)
        ids += [row["id"] for row in rows]
        vectors += [row["vector"] for row in rows]
        upload(client, file, rows, spent)
        if (file + 1) % 10 == 0:
            per_call = ", ".join(f"{step} {s / 10:.3f}" for step, s in spent.items())
            recall = live_recall(client, ids, vectors, queries)
            print(f"{len(ids):,} rows in the base: s per file: {per_call}; {recall}", flush=True)
            spent = {}


if __name__ == "__main__":
    args = sys.argv[1:]

    def option(name: str, default: int) -> int:
        return int(args[args.index(name) + 1]) if name in args else default

    main(args[0], option("--files", 80), option("--rows", 116))
