"""The ingest report: each target's recommendation before the tables, every figure of a row from its record,
failed combinations with their error, LightRAG's LLM route as calls and tokens per document, the plot drawn."""

from __future__ import annotations

import re

from bench.report import write_report
from bench.report.ingest import calls_tables, combinations_table, shared_settings, time_holder
from bench.results.schema.ingest import IngestPointRecord
from bench.results.writer import ResultsWriter
from tests.harness.records import end_record, endpoint_calls, ingest_point, run_header
from tests.report.ingest_fixture import LIGHTRAG, OWUI, write_ingest_report


def _rows(md: str, title: str, after: str = "") -> dict[str, dict[str, str]]:
    """The markdown table under `## title` (`### title`: the first after the heading `after`): combination ->
    column -> cell."""
    block = md[md.index(after) :].split(f"## {title}\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header = [c.strip() for c in block[0].strip("|").split(" | ")]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in block[2:]]
    return {row[0]: dict(zip(header, row)) for row in rows}


def test_the_answer_comes_first(tmp_path):
    page = write_ingest_report(tmp_path)
    md = (tmp_path / "report.md").read_text()
    answer = md.index("## Answer")
    recommended = md.index(f"**{OWUI}**: recommended `RAG_EMBEDDING_BATCH_SIZE=8`: 12.5 docs/s with 0 lost documents")
    assert answer < recommended < md.index("## Combinations")
    assert f"**{LIGHTRAG}**: no combination recommended: nothing was measured" in md
    html = page.read_text()
    assert html.index("<h2>Answer</h2>") < html.index("recommended <code>RAG_EMBEDDING_BATCH_SIZE=8</code>")
    assert html.index("<code>RAG_EMBEDDING_BATCH_SIZE=8</code>") < html.index(f"<h2>Combinations: {OWUI}</h2>")
    assert "None" not in md and "None" not in re.sub(r"base64,[^\"]+", "", html)


def test_each_row_shows_its_record(tmp_path):
    write_ingest_report(tmp_path)
    md = (tmp_path / "report.md").read_text()
    rows = _rows(md, f"Combinations: {OWUI}")
    lossy = rows["RAG_EMBEDDING_BATCH_SIZE=64"]
    assert lossy["status"] == "LOST: 1 failed, 2 lost"
    assert (lossy["documents"], lossy["processed"], lossy["failed"], lossy["lost"]) == ("20", "17", "1", "2")
    assert (lossy["docs/s"], lossy["chunks/s"], lossy["doc p50/p99 ms"]) == ("21.25", "20.0", "95 / 480")
    assert (lossy["direct docs/s"], lossy["app ÷ direct"]) == ("40.00", "0.53")
    calls = _rows((tmp_path / "report.md").read_text(), "Calls through the meter: embedding", f"Combinations: {OWUI}")
    lossy = calls["RAG_EMBEDDING_BATCH_SIZE=64"]
    assert lossy["calls"] == "14" and lossy["texts/call mean/max"] == "4.0 / 4"
    assert lossy["429/413/422/5xx"] == "3/0/0/1" and lossy["retries"] == "4"
    assert (lossy["busy %"], lossy["peak in flight"]) == ("50", "8")
    assert lossy["upstream s (calls timed)"] == "1.50 (10 of 14)"
    assert "RAG_EMBEDDING_BATCH_SIZE=4096" not in calls  # not measured: no calls to show
    assert rows["RAG_EMBEDDING_BATCH_SIZE=8"]["doc p50/p99 ms"] == "150 / –"  # 20 documents: no p99
    failed = rows["RAG_EMBEDDING_BATCH_SIZE=4096"]
    assert failed["status"] == "FAILED (below)"
    assert "Not measured: RAG_EMBEDDING_BATCH_SIZE=4096: the server refused RAG_EMBEDDING_BATCH_SIZE=4096" in md
    assert set(failed.values()) - {failed["combination"], failed["status"]} == {"–"}


def test_failed_and_lost_documents_are_named(tmp_path):
    write_ingest_report(tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "| RAG_EMBEDDING_BATCH_SIZE=64 | doc-7 | embedding failed: 429 |" in md
    assert "| RAG_EMBEDDING_BATCH_SIZE=64 | doc-9 | not listed as processed afterwards |" in md


def test_lightrag_llm_route_shows_calls_and_tokens_per_document(tmp_path):
    write_ingest_report(tmp_path)
    md = (tmp_path / "report.md").read_text()
    row = _rows(md, f"Combinations: {LIGHTRAG}")["default"]
    assert (row["direct docs/s"], row["app ÷ direct"]) == ("–", "–")
    llm = _rows(md, "Calls through the meter: llm", f"Combinations: {LIGHTRAG}")["default"]
    assert llm == {"combination": "default", "calls": "60", "prompt/completion tokens per doc": "1500 / 250"}
    assert _rows(md, "Calls through the meter: embedding", f"Combinations: {LIGHTRAG}")["default"]["calls"] == "10"


def test_the_plot_is_drawn_and_embedded(tmp_path):
    page = write_ingest_report(tmp_path)
    assert (tmp_path / "plots" / "ingest_docs_per_s.png").stat().st_size > 1000
    assert '<img alt="Docs/s per combination (red: documents failed or lost)" src="data:image/png;base64,' in (
        page.read_text()
    )
    assert "](plots/ingest_docs_per_s.png)" in (tmp_path / "report.md").read_text()


def _busy(*fractions: float) -> list[IngestPointRecord]:
    return [
        ingest_point(OWUI, f"c{i}", calls={"embedding": endpoint_calls(busy_fraction=f)})
        for i, f in enumerate(fractions)
    ]


def test_the_answer_names_the_hop_that_held_the_time():
    assert time_holder(_busy(0.99, 0.95)) == (
        "The embedding hop held the time: one of its calls was in flight 95–99% of each combination's wall time"
    )
    assert time_holder(_busy(0.2, 0.35)) == (
        "The app held the time: embedding calls were in flight only 20–35% of each combination's wall time"
    )
    assert time_holder(_busy(0.4, 0.95)).startswith("The app and the embedding hop shared the time: ")
    assert time_holder([]) is None


def _swept(batch: int, concurrent: int, docs_per_s: float) -> IngestPointRecord:
    settings = {"RAG_EMBEDDING_BATCH_SIZE": batch, "RAG_EMBEDDING_CONCURRENT_REQUESTS": concurrent, "CHUNK_SIZE": 40}
    label = " ".join(f"{k}={v}" for k, v in settings.items())
    return ingest_point(OWUI, label, settings=settings, docs_per_s=docs_per_s)


def test_only_the_settings_that_vary_are_columns_and_the_tables_stay_narrow(tmp_path):
    points = [_swept(b, c, 10.0 + b) for b in (1, 32) for c in (0, 4)]
    header, rows = combinations_table(points)
    assert header[:2] == ["RAG_EMBEDDING_BATCH_SIZE", "RAG_EMBEDDING_CONCURRENT_REQUESTS"]
    assert [row[:2] for row in rows] == [["1", "0"], ["1", "4"], ["32", "0"], ["32", "4"]]
    assert "CHUNK_SIZE" not in header and shared_settings(points) == "CHUNK_SIZE=40"
    # A page 1100 px wide holds about a dozen columns: each table stays within that, the meter's in its own.
    tables = [combinations_table(points), *(rows for _, rows in calls_tables(points))]
    assert len(tables) == 2 and all(len(h) <= 12 for h, _ in tables)
    writer = ResultsWriter(tmp_path / "results.jsonl")
    writer.write(run_header("ingest", dataset={"name": "d", "documents": 20}), *points, end_record())
    writer.close()
    page = write_report(tmp_path / "results.jsonl").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "Every combination: `CHUNK_SIZE=40`." in md and "CHUNK_SIZE=40 |" not in md
    assert "<th>RAG_\u200bEMBEDDING_\u200bBATCH_\u200bSIZE</th>" in page  # a long name may break after each `_`
