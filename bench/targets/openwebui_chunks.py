"""Open WebUI's retrieval answer read as chunks: their scores, metadata and texts checked, each mapped to the
corpus document it came from."""

from __future__ import annotations

from typing import Any

from bench.core.http import Reply

DOC_ID_KEY = "ragbench_doc_id"  # the corpus id in each upload's metadata, which Open WebUI merges into its chunks


def read_chunks(reply: Reply) -> tuple[list[Any], list[Any], list[Any]]:
    """(distances, metadatas, chunk texts) of the first query's answer, of one length, each item of its type:
    a metadata an object, a score a number, a text a string (or null)."""
    distances: list[Any] = reply.get("distances", 0, kind=list, default=[])
    metadatas: list[Any] = reply.get("metadatas", 0, kind=list, default=[])
    chunks: list[Any] = reply.get("documents", 0, kind=list, default=[])  # the texts, which answer measures score
    if not len(distances) == len(metadatas) == len(chunks):
        raise reply.wrong_shape(f"{len(distances)} distances, {len(metadatas)} metadatas, {len(chunks)} documents")
    for i in range(len(metadatas)):
        reply.get("metadatas", 0, i, kind=(dict, type(None)))
        reply.get("distances", 0, i, kind=(int, float, type(None)))
        reply.get("documents", 0, i, kind=(str, type(None)))
    return distances, metadatas, chunks


def chunk_documents(metadatas: list[dict[str, Any] | None], file_to_doc: dict[str, str]) -> list[str | None]:
    """The corpus document of each chunk (its metadata's DOC_ID_KEY, else the document its file was uploaded
    for), None where it maps to none."""
    docs: list[str | None] = []
    for meta in metadatas:
        doc_id = (meta or {}).get(DOC_ID_KEY) or file_to_doc.get((meta or {}).get("file_id", ""))
        docs.append(None if doc_id is None else str(doc_id))
    return docs
