"""Where an app query's time goes (bench/targets/hops.py) against the real servers: Open WebUI 0.12.4's three
variants embedding (and reranking) through a real `ragbench meter`, through LiteLLM with a meter on each side, and
LightRAG's mix mode. Each query's parts sum to its latency within 5% with no overlap, and time added to one hop
shows up in that hop and not in the app's share."""

from __future__ import annotations

import os
import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from remote_helpers import judged, run_target, start_meter

from bench.targets.base import QueryResult
from bench.targets.hops import APP_PART, HOPS_OVERLAP
from tests.harness.litellm import EMBED_ALIAS, start_litellm
from tests.harness.process import free_port, stop_process
from tests.harness.stubs import JsonStub, RawBody, Seen, Whole

pytestmark = pytest.mark.integration

KB = "ragbench-test-scifact-slice"  # test_openwebui.py's knowledge base: ingested once per session
QUERIES = 8
RERANK_QUERIES = 4  # the stand-in cross-encoder takes seconds per query on these CPUs
# LightRAG's mix mode re-scores 40+ chunks per query on that cross-encoder (~13 s each here); the split is
# asserted per query, so two queries prove it (test_lightrag.py's naive-on case ranks six with rerank on).
LIGHTRAG_RERANK_QUERIES = 2
DELAY_S = 0.2  # what the slow embedding hop adds to each call
SUM_TOLERANCE = 0.05  # the bound on |sum of parts − latency| per query


def delayed(upstream: str) -> Whole:
    """Forwards a POST to `upstream` after DELAY_S: an embedding hop that is slower by a known amount. On loopback:
    the meter, a process of its own, forwards to it."""

    def forward(seen: Seen) -> tuple[int, RawBody]:
        threading.Event().wait(DELAY_S)
        reply = httpx.post(
            f"{upstream}{seen.path}", content=seen.body, headers={"Content-Type": "application/json"}, timeout=60
        )
        return reply.status_code, RawBody("application/json", reply.content)

    return Whole(forward)


@pytest.fixture(scope="module")
def hop_meter(infinity_server, litellm_env, tmp_path_factory) -> Iterator[dict[str, str]]:
    """A meter with routes `embedding` and `rerank` (infinity), `slow` (infinity DELAY_S later per call) and
    `litellm` (a LiteLLM whose embedding upstream is this meter's `embedding` route: a meter on each side)."""
    slow = JsonStub({}, default=delayed(infinity_server.url))
    work = tmp_path_factory.mktemp("hops")
    litellm_port = free_port()
    upstreams = {
        "embedding": infinity_server.url,
        "rerank": infinity_server.url,
        "slow": slow.url,
        "litellm": f"http://127.0.0.1:{litellm_port}",
    }
    meter_proc, meter = start_meter(upstreams, work / "meter.log")
    key = "sk-ragbench-hops-" + os.urandom(8).hex()
    try:
        litellm_proc, _ = start_litellm(
            litellm_env,
            work,
            f"{meter}/embedding",
            infinity_server.embed_model,
            infinity_server.rerank_model,
            key,
            port=litellm_port,
        )
        try:
            yield {"meter": meter, "litellm_key": key}
        finally:
            stop_process(litellm_proc)
    finally:
        stop_process(meter_proc)
        slow.stop()


@contextmanager
def embedding_through(
    admin: httpx.Client, url: str, model: str | None = None, key: str | None = None
) -> Iterator[None]:
    """Open WebUI's embedding provider pointed at `url` (the user's step: the app calls through the meter),
    and set back as it was, read back to prove it."""
    embedding = admin.get("/api/v1/retrieval/embedding").json()
    fields = ("RAG_EMBEDDING_ENGINE", "RAG_EMBEDDING_MODEL", "RAG_EMBEDDING_BATCH_SIZE", "ENABLE_ASYNC_EMBEDDING")
    form: dict[str, Any] = {k: embedding[k] for k in (*fields, "RAG_EMBEDDING_CONCURRENT_REQUESTS", "openai_config")}
    config = {**form["openai_config"], "url": url, **({"key": key} if key else {})}
    changed = {**form, "openai_config": config, "RAG_EMBEDDING_MODEL": model or form["RAG_EMBEDDING_MODEL"]}
    assert admin.post("/api/v1/retrieval/embedding/update", json=changed).status_code == 200
    try:
        yield
    finally:
        assert admin.post("/api/v1/retrieval/embedding/update", json=form).status_code == 200
        after = admin.get("/api/v1/retrieval/embedding").json()
        assert (after["openai_config"]["url"], after["RAG_EMBEDDING_MODEL"]) == (
            form["openai_config"]["url"],
            form["RAG_EMBEDDING_MODEL"],
        )


def assert_split(results: list[QueryResult], hops: set[str]) -> dict[str, float]:
    """Every query answered, split into exactly `hops` and the app's rest, each part positive and their sum its
    latency within SUM_TOLERANCE, no overlap; each part's median (ms)."""
    for r in results:
        assert r.error is None and r.hits, (r.qid, r.error)
        assert HOPS_OVERLAP not in r.warnings, (r.qid, r.parts_ms, r.latency_s)
        assert set(r.parts_ms) == {*hops, APP_PART}, (r.qid, r.parts_ms)
        assert all(v > 0 for v in r.parts_ms.values()), (r.qid, r.parts_ms)
        latency_ms = (r.latency_s or 0.0) * 1000.0
        assert abs(sum(r.parts_ms.values()) - latency_ms) <= SUM_TOLERANCE * latency_ms, (r.qid, r.parts_ms)
    medians = {p: statistics.median(r.parts_ms[p] for r in results) for p in (*sorted(hops), APP_PART)}
    medians["total"] = statistics.median((r.latency_s or 0.0) * 1000.0 for r in results)
    return medians


def said(medians: dict[str, float]) -> str:
    return ", ".join(f"{p.removesuffix('_ms')} {v:.0f} ms" for p, v in medians.items()) + " (p50)"


def first_queries(scifact_slice, n: int, suffix: str = "") -> dict[str, str]:
    return {qid: text + suffix for qid, text in list(judged(scifact_slice).items())[:n]}


@pytest.mark.parametrize("variant", ["vector", "hybrid", "rerank"])
def test_openwebui_query_time_splits_by_hop(
    variant, hop_meter, openwebui_server, openwebui_key, infinity_server, scifact_slice, admin, figures
):
    meter = hop_meter["meter"]
    spec = f"openwebui:{variant}@{openwebui_server.url}?kb={KB}&meter={meter}"
    hops = {"embedding_ms"}
    n = QUERIES
    if variant == "rerank":
        spec += (
            f"&reranker_url={meter}/rerank/rerank&reranker_model={infinity_server.rerank_model}&reranker_timeout=180"
        )
        hops.add("rerank_ms")
        n = RERANK_QUERIES
    with embedding_through(admin, f"{meter}/embedding"):
        results, described = run_target(spec, scifact_slice, 10, first_queries(scifact_slice, n))
    assert described["metered"]["url"] == meter
    medians = assert_split(results, hops)
    assert all(r.cost["embedding_calls"] >= 1 for r in results)
    figures.add(f"hop split openwebui:{variant}", said(medians))


def test_time_added_to_the_embedding_hop_lands_in_that_hop(
    hop_meter, openwebui_server, openwebui_key, scifact_slice, admin, figures
):
    """The same vector queries with the embedding hop DELAY_S slower per call: the embedding part grows by the
    delay for every call, the app's share does not (the split puts time where it was spent)."""
    meter = hop_meter["meter"]
    queries = first_queries(scifact_slice, QUERIES)
    spec = f"openwebui:vector@{openwebui_server.url}?kb={KB}&meter={meter}"
    with embedding_through(admin, f"{meter}/embedding"):
        fast = assert_split(run_target(spec, scifact_slice, 10, queries)[0], {"embedding_ms"})
    with embedding_through(admin, f"{meter}/slow"):
        slow_results = run_target(spec, scifact_slice, 10, queries)[0]
    slow = assert_split(slow_results, {"slow_ms"})
    calls = statistics.median(r.cost["slow_calls"] for r in slow_results)
    added = slow["slow_ms"] - fast["embedding_ms"]
    assert added >= 0.9 * DELAY_S * 1000.0 * calls, (fast, slow)
    assert abs(slow[APP_PART] - fast[APP_PART]) < 0.25 * DELAY_S * 1000.0, (fast, slow)
    figures.add(
        "hop split, embedding hop 200 ms slower per call",
        f"embedding p50 {fast['embedding_ms']:.0f} -> {slow['slow_ms']:.0f} ms ({calls:.0f} call(s)/query), "
        f"app p50 {fast[APP_PART]:.0f} -> {slow[APP_PART]:.0f} ms",
    )


def test_a_meter_on_each_side_of_litellm_gives_litellm_its_own_share(
    hop_meter, openwebui_server, openwebui_key, scifact_slice, admin, figures
):
    """Open WebUI → meter/litellm → LiteLLM → meter/embedding → infinity, `meter_nest=litellm>embedding`: the
    query's time splits into LiteLLM's own share, infinity's, and Open WebUI's."""
    meter = hop_meter["meter"]
    spec = f"openwebui:vector@{openwebui_server.url}?kb={KB}&meter={meter}&meter_nest=litellm>embedding"
    with embedding_through(admin, f"{meter}/litellm", EMBED_ALIAS, hop_meter["litellm_key"]):
        results, _ = run_target(spec, scifact_slice, 10, first_queries(scifact_slice, QUERIES))
    medians = assert_split(results, {"litellm_ms", "embedding_ms"})
    assert all(r.cost["litellm_calls"] == r.cost["embedding_calls"] >= 1 for r in results)
    figures.add("hop split openwebui:vector through LiteLLM", said(medians))


@pytest.mark.parametrize("rerank", ["off", "on"])
def test_lightrag_query_time_splits_by_hop(rerank, lightrag_server, lightrag_key, meter_url, scifact_slice, figures):
    """Queries no earlier test asked (LightRAG's LLM cache would answer a repeated keyword extraction), over
    test_lightrag.py's corpus: its documents are already on the server, none is inserted again."""
    n = LIGHTRAG_RERANK_QUERIES if rerank == "on" else QUERIES
    queries = first_queries(scifact_slice, n, f" (hop split, rerank {rerank})")
    spec = f"lightrag:mix@{lightrag_server.url}?meter={meter_url}&rerank={rerank}"
    results, _ = run_target(spec, scifact_slice, 10, queries)
    hops = {"llm_ms", "embedding_ms"} | ({"rerank_ms"} if rerank == "on" else set())
    medians = assert_split(results, hops)
    figures.add(f"hop split lightrag:mix rerank={rerank}", said(medians))
