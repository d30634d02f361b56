"""Fixtures for the gate tests (tests/commands uses them too, through its conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from bench.targets import registry
from tests.gate.helpers import PUSHED_OUT, RelevantPushedOut
from tests.harness.cli import CliResult


@pytest.fixture
def worse_kind(monkeypatch):
    """Target kind `worse`: bm25 with 10% of queries' relevant documents pushed out of the ranking."""

    def build(spec, options):
        from bench.targets.bm25_engine import BM25Engine

        return RelevantPushedOut(BM25Engine(name=spec.name), PUSHED_OUT, seed=7)

    monkeypatch.setitem(registry.TARGET_FACTORIES, "worse", build)


@pytest.fixture
def compare(ragbench: Callable[..., CliResult]) -> Callable[..., CliResult]:
    """`compare(*args)`: (exit code, stdout, stderr) of `ragbench compare ARGS`, run in-process."""
    return partial(ragbench, "compare")
