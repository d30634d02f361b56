"""Session fixtures that run real servers: infinity-emb and a LiteLLM proxy in front of it.

Each server lives in its own virtual environment built by `scripts/envs/<name>.sh` outside the clone.
A missing environment is a failure with the command that builds it, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.cli import ragbench  # noqa: F401 (fixtures for every test)
from tests.harness.figures import FIGURES
from tests.harness.fixtures import cache_dir, fruit, machine_never_busy, tiny  # noqa: F401
from tests.harness.litellm import EMBED_ALIAS, RERANK_ALIAS, start_litellm
from tests.harness.models import (
    EMBED_MODEL_NAME,
    INFINITY_ENV,
    INFINITY_VERSION,
    RERANK_MODEL_NAME,
    env_root,
    infinity_argv,
    minilm_path,
    reranker_standin_path,
)
from tests.harness.process import free_port, start_process, stop_process, wait_healthy
from tests.harness.tei_fixture import MiniLMBackend, TeiFixtureServer, start_fixture
from tests.paths import shared

LITELLM_VERSION = "1.106.12"


@dataclass(frozen=True)
class InfinityServer:
    url: str  # http://127.0.0.1:PORT; routes sit at the root (/embeddings, /rerank), no /v1
    embed_model: str  # served name of the MiniLM embedding model
    rerank_model: str  # served name of the stand-in cross-encoder
    embed_model_path: Path
    rerank_model_path: Path


@dataclass(frozen=True)
class LiteLLMServer:
    url: str  # http://127.0.0.1:PORT; OpenAI routes under /v1, rerank at /v1/rerank and /v2/rerank
    key_env: str  # name of the environment variable that holds the proxy's master key
    embed_model: str  # openai/ provider -> infinity /embeddings
    rerank_model: str  # infinity/ provider -> infinity /rerank
    upstream: InfinityServer


def _server_env(name: str, version: str, script: str) -> Path:
    directory = env_root() / f"{name}-{version}"
    if not (directory / ".complete").exists():
        pytest.fail(
            f"{name} {version} environment missing at {directory}: run `bash scripts/envs/{script}` first "
            "(scripts/test.sh does)",
            pytrace=False,
        )
    return directory


# Fixtures that start a real server from an environment scripts/test.sh builds: a test that uses one (directly
# or through another fixture) is an integration test, so `pytest -m "not integration"` runs without them.
SERVER_FIXTURES = {"infinity_server", "litellm_server", "openwebui_server", "lightrag_server", "meter_url"}


# Fixtures that load a model (MiniLM behind the in-process TEI fixtures) or run every command once (the reports'
# outputs): a test that uses one is slow, left out of the fast lane `-m "not integration and not slow"`.
SLOW_FIXTURES = {"minilm_backend", "command_outputs"}


# Session fixtures too costly to pay once per pytest-xdist worker (scripts/test.sh runs two): the tests that use
# one run on one worker, as one xdist group (`--dist loadgroup`); every other test goes with its module, so a
# module-scoped fixture is built once too. The apps (Open WebUI, LightRAG and the meter in front of them) and the
# bare servers (infinity, LiteLLM) are two groups: together they were the run's last 10 minutes on one worker
# while the other had finished; apart, each worker starts its own infinity (about 20 s), the first group that
# matches a test's fixtures taking it.
APP_FIXTURES = {"openwebui_server", "lightrag_server", "meter_url"}
SHARED_GROUPS = (("apps", APP_FIXTURES), ("servers", SERVER_FIXTURES), ("command-outputs", {"command_outputs"}))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups and `-m` reads the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups: dict[str, str] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SERVER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.integration)
        if SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        group = next((name for name, needs in SHARED_GROUPS if needs & fixtures), item.nodeid.split("::")[0])
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item.nodeid] = group
    # The longest groups first (scripts/test.sh keeps this order: --no-loadscope-reorder): each worker starts on one
    # of them and the modules fill in behind, rather than a group of minutes starting last and running alone.
    first = [name for name, _ in SHARED_GROUPS]
    items.sort(key=lambda item: first.index(groups[item.nodeid]) if groups[item.nodeid] in first else len(first))


@pytest.fixture(autouse=True)
def isolated_process_state() -> Iterator[None]:
    """Each test starts from the process state a fresh `ragbench` has: no secret values remembered from
    another test (a test's key "secret" would mask every later path holding that word), and the signal
    handlers as they were (an in-process main() installs its own for the process's last instants)."""
    import signal

    from bench.core import secrets

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    known = set(secrets._known)
    secrets._known.clear()
    yield
    secrets._known.clear()
    secrets._known.update(known)
    for s, handler in handlers.items():
        signal.signal(s, handler)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared: skipped with one line outside CI when it is missing, failed under CI=true (tests/paths.py)."""
    return shared()


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-logs")


@pytest.fixture(scope="session")
def infinity_server(server_logs: Path) -> Iterator[InfinityServer]:
    _server_env("infinity-emb", INFINITY_VERSION, "infinity.sh")  # built once; infinity_argv runs it from there
    embed_path = minilm_path()
    rerank_path = reranker_standin_path()
    port = free_port()
    argv = infinity_argv(((embed_path, EMBED_MODEL_NAME), (rerank_path, RERANK_MODEL_NAME)), port)
    proc = start_process("infinity-emb", argv, server_logs / "infinity.log", env=INFINITY_ENV)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(proc, f"{url}/health", deadline_s=240)
        yield InfinityServer(url, EMBED_MODEL_NAME, RERANK_MODEL_NAME, embed_path, rerank_path)
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def litellm_env() -> Path:
    """LiteLLM's environment (tests/harness/litellm.py starts a proxy from it)."""
    return _server_env("litellm", LITELLM_VERSION, "litellm.sh")


@pytest.fixture(scope="session")
def litellm_server(infinity_server: InfinityServer, litellm_env: Path, server_logs: Path) -> Iterator[LiteLLMServer]:
    key_env = "RAGBENCH_TEST_LITELLM_KEY"
    key = "sk-ragbench-test-" + os.urandom(8).hex()
    os.environ[key_env] = key  # clients read the key from the environment, as users' do
    proc, url = start_litellm(
        litellm_env, server_logs, infinity_server.url, infinity_server.embed_model, infinity_server.rerank_model, key
    )
    try:
        yield LiteLLMServer(url, key_env, EMBED_ALIAS, RERANK_ALIAS, infinity_server)
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def minilm_backend() -> MiniLMBackend:
    """The MiniLM embedder and the stand-in cross-encoder, loaded once, behind every in-process fixture server."""
    return MiniLMBackend(minilm_path(), reranker_standin_path())


@pytest.fixture
def tei_fixture(minilm_backend: MiniLMBackend) -> Iterator[Callable[..., TeiFixtureServer]]:
    """Factory: `tei_fixture(version="1.8.4", faults=("truncate:128",))` starts a TEI-contract server."""
    started: list[TeiFixtureServer] = []

    def start(**behaviour) -> TeiFixtureServer:
        server = start_fixture(minilm_backend, **behaviour)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.nodeid.startswith("tests/targets/remote/"):
        FIGURES.remote_spent_s += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker: hand the measured figures to the controller, which prints them."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["figures"] = FIGURES.lines


def pytest_testnodedown(node: object, error: object) -> None:
    """On the pytest-xdist controller, as each worker ends: the figures it measured."""
    FIGURES.lines.update(getattr(node, "workeroutput", {}).get("figures", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not FIGURES.lines:
        return
    terminalreporter.section("remote targets: measured figures")
    for label, value in FIGURES.lines.items():
        terminalreporter.write_line(f"{label}: {value}")
    terminalreporter.write_line(f"remote-target tests wall time (servers included): {FIGURES.remote_spent_s:.0f} s")
