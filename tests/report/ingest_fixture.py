"""An ingest results file made from hand-built records: two targets, lost and failed combinations, an LLM route;
the report tests and the layout test read its report."""

from __future__ import annotations

from pathlib import Path

from bench.report import write_report
from bench.results.schema import IngestStatus
from bench.results.writer import ResultsWriter
from tests.harness.records import (
    direct_ingest,
    end_record,
    endpoint_calls,
    ingest_point,
    ingest_summary,
    run_header,
)

OWUI = "openwebui@http://owui:8080"
LIGHTRAG = "lightrag@http://lightrag:9621"


def ingest_records() -> list[object]:
    """Two Open WebUI combinations (one losing documents after 429s), one that could not be measured, one
    LightRAG point with an LLM route; a summary per target."""
    lossy_calls = endpoint_calls(calls=14, by_status={"ok": 10, "429": 3, "5xx": 1}, retries=4, peak_in_flight=8)
    return [
        ingest_point(OWUI, "RAG_EMBEDDING_BATCH_SIZE=8", docs_per_s=12.5, chunks_per_s=31.25),
        ingest_point(
            OWUI,
            "RAG_EMBEDDING_BATCH_SIZE=64",
            status=IngestStatus.LOST,
            processed=17,
            failed=1,
            lost=2,
            docs_per_s=21.25,
            doc_latency_ms={"p50": 95.0, "p99": 480.0, "n": 17},
            calls={"embedding": lossy_calls},
            direct=direct_ingest(docs_per_s=40.0),
            app_over_direct=0.53125,
            failed_examples={"doc-7": "embedding failed: 429", "doc-9": "not listed as processed afterwards"},
        ),
        ingest_point(
            OWUI,
            "RAG_EMBEDDING_BATCH_SIZE=4096",
            status=IngestStatus.FAILED,
            documents=0,
            processed=0,
            docs_per_s=None,
            calls={},
            direct=None,
            app_over_direct=None,
            error="the server refused RAG_EMBEDDING_BATCH_SIZE=4096",
        ),
        ingest_summary(OWUI, "RAG_EMBEDDING_BATCH_SIZE=8", "12.5 docs/s with 0 lost documents"),
        ingest_point(
            LIGHTRAG,
            "default",
            kind="lightrag",
            docs_per_s=0.5,
            calls={
                "embedding": endpoint_calls(),
                "llm": endpoint_calls(
                    calls=60, texts=0, texts_per_call_mean=None, texts_per_call_max=None,
                    prompt_tokens=30000, completion_tokens=5000,
                ),
            },
            direct=None,
            app_over_direct=None,
        ),
        ingest_summary(LIGHTRAG, None, "nothing was measured"),
    ]  # fmt: skip


def write_ingest_report(folder: Path) -> Path:
    writer = ResultsWriter(folder / "results.jsonl")
    writer.write(run_header("ingest", dataset={"name": "scifact", "documents": 20}), *ingest_records())
    writer.write(end_record())
    writer.close()
    return write_report(folder / "results.jsonl")
