"""`ragbench quality` and `ragbench ingest` through a real Open WebUI 0.12.4 whose vectors live in a real
PostgreSQL + pgvector 0.8.2 as halfvec under an HNSW index (issue 47), started by the harness like every other real
server: the same claims as on Chroma (every query ranked, nDCG@10 within 0.05 of the local dense engine, every
document processed, settings restored), the store named in the results, and the vectors seen in PostgreSQL itself.
Small corpora: this Open WebUI is a second one, started only for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from remote_helpers import judged, ndcg10, scifact_sample

from bench.results.schema.run import record_store
from bench.results.store import read_results
from bench.targets.base import no_progress
from bench.targets.openwebui_settings import SETTINGS
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.beir import write_beir, write_dataset
from tests.harness.cli import run_cli_process
from tests.harness.openwebui import admin_client

pytestmark = pytest.mark.integration

PG = "pgvector-halfvec-hnsw"
# The slice's 40 queries with their 41 judged documents and a few distractors: the claim is the store's wiring and
# the same quality as the local engine, not a size (docs/grow.md grows the stores side by side).
SLICE_DOCS = 60
DEPTH = 10
INGEST_DOCS = {f"p{i}": f"Paragraph {i} is about topic {i % 3}, stored as halfvec in PostgreSQL." for i in range(6)}


def _retrieval(server) -> dict:
    with admin_client(server) as client:
        config = client.get("/api/v1/retrieval/config").json()
        embedding = client.get("/api/v1/retrieval/embedding").json()
    return {**{k: config[k] for k in SETTINGS}, "batch": embedding["RAG_EMBEDDING_BATCH_SIZE"]}


def test_quality_through_openwebui_on_pgvector_halfvec(tmp_path, openwebui_pgvector_server, postgres_server, figures):
    dataset = scifact_sample(SLICE_DOCS)
    data = write_dataset(tmp_path / "data", dataset)
    out = tmp_path / "out"
    before = _retrieval(openwebui_pgvector_server)
    spec = f"openwebui:vector@{openwebui_pgvector_server.url}?kb=ragbench-test-pgvector&store={PG}"
    argv = ["quality", "--dataset", str(data), "--split", "test", "--out", str(out), "--depth", str(DEPTH)]
    done = run_cli_process(
        [*argv, "-m", "nDCG@10", "-t", spec], env={"OPENWEBUI_API_KEY": openwebui_pgvector_server.api_key}, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert _retrieval(openwebui_pgvector_server) == before  # settings restored, as on Chroma

    results = read_results(out / "results.jsonl")
    (target,) = results.targets
    assert target.name == f"openwebui:vector?kb=ragbench-test-pgvector&store={PG}"
    assert (target.status, target.errors, target.queries) == ("ok", 0, len(judged(dataset)))
    assert target.config["store"] == {
        "name": PG, "kind": "pgvector", "index": "halfvec, hnsw", "source": "stated", "app_reported": None,
    }  # fmt: skip
    assert record_store(target) == PG
    remote = next(m.mean for m in results.metrics if m.target == target.name)

    dense = build_target(parse_target_spec("dense"), TargetOptions())
    dense.prepare(dataset, no_progress)
    local = ndcg10(dataset, dense.search(judged(dataset), DEPTH, no_progress))
    figures.add(
        "nDCG@10, Open WebUI on pgvector (halfvec, HNSW)",
        f"{remote:.4f} vs local dense {local:.4f} ({len(dataset.corpus)} docs), p50 {target.latency_ms['p50']:.0f} ms",
    )
    assert remote == pytest.approx(local, abs=0.05)

    # The vectors are PostgreSQL's: a halfvec column of the embedder's 384 dimensions under Open WebUI's HNSW index.
    column = "select format_type(atttypid, atttypmod) from pg_attribute where attrelid = 'document_chunk'::regclass"
    assert postgres_server.sql(f"{column} and attname = 'vector'") == "halfvec(384)"
    index = postgres_server.sql("select indexdef from pg_indexes where indexname = 'idx_document_chunk_vector'")
    assert "USING hnsw" in index and "halfvec_cosine_ops" in index
    assert int(postgres_server.sql("select count(*) from document_chunk")) >= len(dataset.corpus)


def test_ingest_through_openwebui_on_pgvector_halfvec(tmp_path, openwebui_pgvector_server, postgres_server):
    data = write_beir(tmp_path / "data", INGEST_DOCS, {"q1": "topic"}, [("q1", "p1", 1)])
    before, rows = (
        _retrieval(openwebui_pgvector_server),
        int(postgres_server.sql("select count(*) from document_chunk")),
    )
    argv = [
        "ingest", "--dataset", str(data), "--out", str(tmp_path / "out"),
        "-t", f"openwebui@{openwebui_pgvector_server.url}?concurrency=2&store={PG}",
        "--setting", "RAG_EMBEDDING_BATCH_SIZE=1,32", "--no-direct", "--keep",
    ]  # fmt: skip
    done = run_cli_process(argv, env={"OPENWEBUI_API_KEY": openwebui_pgvector_server.api_key}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _retrieval(openwebui_pgvector_server) == before  # the swept batch size written back

    results = read_results(tmp_path / "out" / "results.jsonl")
    points = {p.settings["RAG_EMBEDDING_BATCH_SIZE"]: p for p in results.ingest_points}
    assert set(points) == {1, 32}
    for point in points.values():
        assert (point.status, point.processed, point.lost, point.failed) == ("ok", len(INGEST_DOCS), 0, 0)
        assert record_store(point) == PG  # the store is named in the results: the point's target is its spec
    # Each kept knowledge base's chunks are rows in PostgreSQL (one chunk a paragraph, in the knowledge base's
    # collection and the file's own): nothing went to a Chroma folder.
    assert int(postgres_server.sql("select count(*) from document_chunk")) - rows >= 2 * len(INGEST_DOCS)
    assert not list(Path(openwebui_pgvector_server.data_dir).glob("vector_db/chroma.sqlite3"))
