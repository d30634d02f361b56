"""`ingest_lightrag` against a real LightRAG 1.5.7 of its own whose providers (the LLM double, infinity's
embeddings) sit behind an in-process `Meter(log_calls=True)`, as `ragbench ingest` runs one: every document
processed and listed, each route's calls counted per call, the embedding calls resent straight to infinity, and
a second ingest of the same documents refused.

The folder's session LightRAG reaches its providers through a `ragbench meter` process, which keeps totals only;
LightRAG's provider URLs are fixed when it starts, so this module starts its own server pointed at its own meter
(a fresh workspace, too: the session server's documents would not be new)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.core.errors import UserError
from bench.datasets.model import Dataset
from bench.endpoints.meter import Meter
from bench.ingest.lightrag import ingest_lightrag
from bench.results.schema import IngestStatus
from bench.targets.base import TargetOptions, no_progress
from bench.targets.http_shared import DedupedCorpus
from bench.targets.lightrag import LightRAGTarget
from bench.targets.registry import parse_target_spec
from tests.harness.lightrag import LightRAGServer, Providers, start_lightrag
from tests.harness.process import stop_process

pytestmark = pytest.mark.integration

DOCS = 20


@pytest.fixture(scope="module")
def metered_lightrag(
    llm_double, infinity_server, server_logs, tmp_path_factory
) -> Iterator[tuple[Meter, LightRAGServer]]:
    meter = Meter({"llm": llm_double.base_url, "embedding": infinity_server.url}, log_calls=True).start()
    try:
        providers = Providers(
            llm_url=f"{meter.url}/llm",
            llm_model="llm-double",
            embed_url=f"{meter.url}/embedding",
            embed_model=infinity_server.embed_model,
            embed_dim=384,
        )
        work_dir = tmp_path_factory.mktemp("lightrag-ingest")
        proc, server = start_lightrag(work_dir, server_logs / "lightrag-ingest.log", providers)
        try:
            yield meter, server
        finally:
            stop_process(proc)
    finally:
        meter.close()


def test_every_document_and_every_call_is_measured(metered_lightrag, scifact_slice: Dataset, monkeypatch, figures):
    meter, server = metered_lightrag
    monkeypatch.setenv("LIGHTRAG_API_KEY", server.api_key)
    corpus = DedupedCorpus.of(dict(list(scifact_slice.corpus.items())[:DOCS]))
    target = LightRAGTarget(parse_target_spec(f"lightrag@{server.url}"), TargetOptions())
    try:
        point = ingest_lightrag(target, corpus, meter, meter.upstreams, no_progress)
        with pytest.raises(UserError, match=f"all {DOCS} documents are already on the server"):
            ingest_lightrag(target, corpus, meter, meter.upstreams, no_progress)
    finally:
        target.close()
    assert (point.kind, point.label, point.settings, point.status) == ("lightrag", "default", {}, IngestStatus.OK)
    assert point.documents == point.processed == DOCS and point.failed == point.lost == 0
    assert point.seconds > 0 and point.docs_per_s == pytest.approx(DOCS / point.seconds)
    assert point.doc_latency_ms["n"] == DOCS and 0 < point.doc_latency_ms["p50"] <= point.seconds * 1000
    assert point.chunks is not None and point.chunks >= DOCS and point.upload_concurrency > 0
    embedding, llm = point.calls["embedding"], point.calls["llm"]
    assert embedding.calls > 0 and embedding.by_status == {"ok": embedding.calls} and embedding.texts >= point.chunks
    # MAX_GLEANING=0: one extraction call per chunk, plus a description summary where an entity recurs.
    assert llm.calls >= point.chunks and llm.by_status == {"ok": llm.calls}
    assert llm.prompt_tokens > 0 and llm.completion_tokens > 0 and llm.texts == 0
    assert point.direct is not None and point.direct.calls > 0 and point.direct.failed_calls == 0
    assert point.app_over_direct is not None and point.app_over_direct > 0
    figures.add(
        "lightrag ingest (ingest_lightrag)",
        f"{point.docs_per_s:.2f} docs/s ({DOCS} docs, {point.chunks} chunks, doc p50 "
        f"{point.doc_latency_ms['p50']:.0f} ms; {llm.calls} LLM calls, {embedding.calls} embedding calls; "
        f"app ÷ direct {point.app_over_direct:.3f})",
    )
