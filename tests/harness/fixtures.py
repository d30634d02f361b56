"""Fixtures every test may take (tests/conftest.py exposes them): a private embedding cache and small data sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.beir import FRUIT_CORPUS, FRUIT_QRELS, FRUIT_QUERIES, write_beir


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RAGBENCH_CACHE set to this test's own folder (not created: ragbench makes it when it first writes)."""
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(autouse=True)
def private_embedding_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test session encodes into its own cache, so no result depends on an earlier run's cache (autouse where a
    conftest imports it: tests/quality, tests/targets)."""
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "ragbench-cache"))


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BEIR folder of 4 documents `text N` and 3 queries `query N`, query qN judging dN relevant; read only."""
    return write_beir(
        tmp_path_factory.mktemp("tiny"),
        {f"d{i}": f"text {i}" for i in range(4)},
        {f"q{i}": f"query {i}" for i in range(3)},
        [(f"q{i}", f"d{i}", 1) for i in range(3)],
    )


@pytest.fixture
def fruit(tmp_path: Path, cache_dir: Path) -> Path:
    """The fruit-word BEIR folder (tests/harness/beir.py) in this test's folder, with a cache of its own."""
    return write_beir(tmp_path / "fruit", FRUIT_CORPUS, FRUIT_QUERIES, FRUIT_QRELS)


@pytest.fixture
def machine_never_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The busy rule (bench/core/machine.py) out of the way, in this process: for a test of a gate's or a pairing's
    mechanics on a fast loopback server, whose few milliseconds a busy runner's client lag exceeds — where the rule
    would rightly leave the figures ungated and the mechanics untested. The rule has tests of its own."""
    monkeypatch.setattr("bench.core.machine.BUSY_LAG_SHARE", float("inf"))
