"""Recall@k of pgvector's approximate index itself, apart from any model's quality (issue 47): each query's top k
through the query Open WebUI 0.12.4 sends (`WHERE collection_name = … ORDER BY vector <=> q LIMIT k`, its
`SET LOCAL hnsw.iterative_scan = relaxed_order` by default) against the exact top k over the same rows (index scans
off: a sequential scan and sort), for a few search settings. Used by benchmarks/grow_openwebui.py at every rung of
a pgvector ladder (`RungRecall`: each knowledge base right after grow wrote its rung, while the other mode ingests:
the base measured does not change under it) and at its end; the query vectors are the hash stand-in's, as Open
WebUI stored the chunks'.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from store_recall import Recall, tie_recall
from store_recall import RungRecall as StoreRungRecall

from tests.harness.hash_embedder import DIMS, hash_vector
from tests.harness.pgvector import PostgresServer

TIE = 1e-3  # halfvec keeps ~3 significant digits: distances closer than this are one distance
EXACT = "set enable_indexscan = off; set enable_bitmapscan = off;"
# What Open WebUI 0.12.4 runs (PGVECTOR_ITERATIVE_SCAN defaults to relaxed_order; hnsw.ef_search stays 40), and the
# two settings around it that the app exposes or the server does.
SETTINGS = {
    "as Open WebUI runs it (ef_search 40, iterative relaxed_order)": "set hnsw.iterative_scan = relaxed_order;",
    "iterative scan off (PGVECTOR_ITERATIVE_SCAN=off)": "set hnsw.iterative_scan = off;",
    "ef_search 200, iterative relaxed_order": "set hnsw.ef_search = 200; set hnsw.iterative_scan = relaxed_order;",
}


def _distances(pg: PostgresServer, prefix: str, collection: str, query: str, k: int) -> list[float]:
    """The cosine distances of the k rows the query returns under `prefix`'s settings, in its order."""
    # One psql session: the settings apply to the select, which is the only statement that prints rows.
    lines = pg.sql(f"{prefix} {_select(collection, query, k)}").splitlines()
    return [float(line.split("|")[1]) for line in lines if line]


def _plan(pg: PostgresServer, collection: str, query: str, k: int) -> str:
    lines = pg.sql(f"explain {_select(collection, query, k)}").splitlines()
    return next((line.strip() for line in lines if "Scan" in line), lines[0] if lines else "")


def index_recall(
    pg: PostgresServer, queries: list[str], k: int = 10, only: str = "", settings: dict[str, str] = SETTINGS
) -> list[Recall]:
    """Recall@k per knowledge-base collection (not Open WebUI's per-file `file-…` ones; `only`: that one) and
    setting."""
    found: list[Recall] = []
    listing = pg.sql(
        "select collection_name, count(*) from document_chunk where collection_name not like 'file-%' group by 1"
    )
    for line in listing.splitlines():
        collection, rows = line.split("|")
        if only and collection != only:
            continue
        exact = {q: _distances(pg, EXACT, collection, q, k) for q in queries}
        plan = _plan(pg, collection, queries[0], k)
        for setting, prefix in settings.items():
            hits, short = 0.0, 0
            for q in queries:
                got = _distances(pg, prefix, collection, q, k)
                short += len(got) < min(k, int(rows))
                # Stand-in vectors tie often (hashed word counts): any row as close as the exact k-th is a true one.
                hits += tie_recall(got, exact[q], TIE)
            found.append(Recall(collection, int(rows), setting, hits / len(queries), short, plan))
    return found


def _select(collection: str, query: str, k: int) -> str:
    literal = "[" + ",".join(f"{x:.6f}" for x in hash_vector(query)) + "]"
    order = f"vector <=> '{literal}'::halfvec({DIMS})"
    return f"select id, {order} from document_chunk where collection_name = '{collection}' order by {order} limit {k}"


AT_RUNGS = {k: v for k, v in SETTINGS.items() if "off" not in k}  # per rung: the app's setting and ef_search 200


class RungRecall(StoreRungRecall):
    """Recall@10 of each knowledge base at every rung (store_recall.RungRecall), measured in PostgreSQL: the base
    `base_of(target)` (its collection name) under the app's setting and ef_search 200."""

    def __init__(self, pg: PostgresServer, results: Path, base_of: Callable[[str], str], queries: list[str], out: Path):
        def measure(target: str) -> list[Recall]:
            return index_recall(pg, queries, 10, base_of(target), AT_RUNGS)

        super().__init__(results, measure, out)
