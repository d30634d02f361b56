"""A LightRAG ingest's figures from the server's list afterwards: processed, failed and lost documents, the span
and per-document times on the server's clock (the client's wall time where it gives none), chunks; and the meter
routes checked against the provider hosts LightRAG's /health names, before anything is inserted."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.core.http import Reply
from bench.endpoints.meter import Meter
from bench.ingest.lightrag import check_meter_routes, listed_outcome
from bench.targets.lightrag import ServerConfiguration
from bench.targets.lightrag_documents import ListedDocument

INSERTED = {"a.txt": "a", "b.txt": "b", "c.txt": "c"}


def _doc(status: str, created: str | None, updated: str | None, **more: object) -> ListedDocument:
    return ListedDocument.of({"status": status, "created_at": created, "updated_at": updated, **more})


def test_the_server_list_decides_and_its_clock_times():
    listed = {
        "a.txt": _doc("PROCESSED", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:02.500000+00:00", chunks_count=3),
        "b.txt": _doc("processed", "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:04+00:00", chunks_count=2),
        "c.txt": _doc("failed", "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:05+00:00", error_msg="LLM timed out"),
        "other.txt": _doc("processed", "2025-01-01T00:00:00+00:00", "2025-01-01T00:00:01+00:00"),
    }
    outcome = listed_outcome(listed, INSERTED, wall_s=9.0)
    assert (outcome.documents, outcome.processed, outcome.failed, outcome.lost) == (
        3,
        ["a", "b"],
        {"c": "LLM timed out"},
        [],
    )
    assert outcome.seconds == pytest.approx(5.0)  # first enqueued to the last final, the failed one included
    assert outcome.per_doc_s == pytest.approx([2.5, 3.0])
    assert outcome.chunks == 5


def test_a_document_not_listed_is_lost_and_no_timestamps_mean_wall_time():
    listed = {"a.txt": _doc("processed", None, None, chunks_count=1), "b.txt": _doc("processing", None, None)}
    outcome = listed_outcome(listed, INSERTED, wall_s=9.0)
    assert (outcome.processed, outcome.lost) == (["a"], ["b", "c"])
    assert (outcome.seconds, outcome.per_doc_s) == (9.0, [])


def test_chunks_unknown_where_the_server_gives_none():
    listed = {"a.txt": _doc("processed", None, None)}
    assert listed_outcome(listed, {"a.txt": "a"}, wall_s=1.0).chunks is None


def _health(configuration: dict[str, object]) -> ServerConfiguration:
    """The configuration of a /health answer that reports `configuration`."""
    body = {"status": "healthy", "configuration": configuration}
    return ServerConfiguration.of(Reply("LightRAG at stub", "GET /health", 200, body, ""))


def test_a_provider_not_pointed_at_the_meter_is_refused_before_inserting():
    meter = Meter({"embedding": "http://127.0.0.1:1", "llm": "http://127.0.0.1:2"})
    try:
        good = {"embedding_binding_host": f"{meter.url}/embedding", "llm_binding_host": f"{meter.url}/llm/v1"}
        check_meter_routes(_health(good), meter, meter.upstreams)
        bad = {**good, "llm_binding_host": "http://user:secret@llm.example:8000/v1"}
        with pytest.raises(UserError) as caught:
            check_meter_routes(_health(bad), meter, meter.upstreams)
        message = caught.value.args[0]
        assert message.startswith("--meter-upstream llm: LightRAG sends its llm calls to http://")
        assert f"start it with LLM_BINDING_HOST={meter.url}/llm" in message and "secret" not in message
        check_meter_routes(_health({}), meter, meter.upstreams)  # a server that names no host: nothing to check
    finally:
        meter.close()
