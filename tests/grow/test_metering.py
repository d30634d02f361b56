"""The embedder's calls per rung through ingest's meter: calls, texts and tokens of a phase, and the app's chunks
as the distinct texts its embedding calls carried."""

from __future__ import annotations

import json

import httpx

from bench.grow.metering import MeterPlan, Window, start_meter
from bench.targets.base import TargetSpec
from tests.harness.stubs import JsonStub


def _embed(body: bytes) -> tuple[int, dict]:
    texts = json.loads(body)["input"]
    data = [{"object": "embedding", "index": i, "embedding": [0.1, 0.2]} for i in range(len(texts))]
    return 200, {"data": data, "usage": {"prompt_tokens": 3 * len(texts), "total_tokens": 3 * len(texts)}}


def test_a_window_reads_the_calls_texts_tokens_and_distinct_chunks_of_its_phase():
    embedder = JsonStub({("POST", "/v1/embeddings"): _embed})
    meter = start_meter(MeterPlan({"embedding": f"{embedder.url}/v1"}, "127.0.0.1", 0))
    assert meter is not None
    try:
        window = Window(meter)
        send = lambda texts: httpx.post(f"{meter.url}/embedding/embeddings", json={"input": texts, "model": "m"})  # noqa: E731
        send(["before"])  # another phase's call
        mark = window.mark()
        assert send(["a", "b"]).status_code == 200 and send(["b", "c"]).status_code == 200
        read = window.read(TargetSpec("bm25", "bm25"), mark, 1.0)  # type: ignore[arg-type]
    finally:
        meter.close()
        embedder.stop()
    assert read is not None
    embedding = read.calls["embedding"]
    assert (embedding.calls, embedding.texts, embedding.prompt_tokens) == (2, 4, 12)
    assert read.chunks == 3  # "b" embedded twice is one chunk


def test_without_a_meter_nothing_is_read():
    assert start_meter(MeterPlan({}, "127.0.0.1", 0)) is None
    assert Window(None).read(TargetSpec("bm25", "bm25"), 0, 1.0) is None  # type: ignore[arg-type]


def test_open_webuis_two_embeddings_of_a_chunk_count_once_and_its_knowledge_bases_own_text_is_no_chunk(monkeypatch):
    from bench.targets.registry import TargetOptions, build_target, parse_target_spec
    from tests.harness.openwebui_fake import FakeOpenWebUI

    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    embedder = JsonStub({("POST", "/v1/embeddings"): _embed})
    meter = start_meter(MeterPlan({"embedding": f"{embedder.url}/v1"}, "127.0.0.1", 0))
    fake = FakeOpenWebUI()
    target = build_target(parse_target_spec(f"openwebui:vector@{fake.url}?kb=grow-vector"), TargetOptions())
    assert meter is not None
    try:
        window = Window(meter)
        send = lambda texts: httpx.post(f"{meter.url}/embedding/embeddings", json={"input": texts, "model": "m"})  # noqa: E731
        send(["grow-vector\n\ncreated by ragbench"])  # Open WebUI 0.12.4 embeds the new knowledge base itself
        # as measured on it: a chunk with line breaks, embedded for the file's collection, then for the base's
        send(["row-major, C-style order.   To group", "Parameters ---------- a"])
        send(["row-major, C-style order. To group", "Parameters ---------- a"])
        read = window.read(target, 0, 1.0)
    finally:
        target.close()
        fake.close()
        meter.close()
        embedder.stop()
    assert read is not None and read.chunks == 2
