"""One `quality` run checks each option once and reads its results file back once."""

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import bench.endpoints.spec
import bench.quality.background_spec
import bench.results.store
import bench.targets.endpoint_refs
from tests.harness.cli import run_cli
from tests.quality.underload_fixture import UnderloadServer, write_long_queries


def _count_calls(monkeypatch, calls: Counter[str], function: Callable[..., Any], name: str) -> None:
    """Every module's reference to `function` replaced by one that counts its calls under `name`."""

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return function(*args, **kwargs)

    for module in list(sys.modules.values()):
        for attribute, value in list(vars(module).items()):
            if value is function:
                monkeypatch.setattr(module, attribute, counted)


@pytest.fixture
def server():
    server = UnderloadServer(max_inflight=3, service_ms=1).start()
    yield server
    server.shutdown()


def test_a_quality_run_parses_and_checks_each_option_once_and_reads_its_results_once(
    tmp_path, server, monkeypatch, capsys
):
    dataset = write_long_queries(tmp_path, queries=4)
    calls: Counter[str] = Counter()
    _count_calls(monkeypatch, calls, bench.endpoints.spec.parse_endpoint_spec, "-e")
    _count_calls(monkeypatch, calls, bench.quality.background_spec.background_spec, "--background")
    _count_calls(monkeypatch, calls, bench.targets.endpoint_refs.check_endpoint_refs, "check_endpoint_refs")
    _count_calls(monkeypatch, calls, bench.results.store.read_results, "read_results")
    args = ["quality", "--dataset", str(dataset), "-e", f"emb=tei@{server.url}", "-t", "dense?embedder=emb"]
    background = "emb@rate=20&duration=0.3s&warmup=0.1s"
    args += ["--background", background, "-m", "nDCG@10", "--out", str(tmp_path / "out")]
    code, out, err = run_cli(args, monkeypatch, capsys)
    assert code == 0, err
    assert "report: " in out
    assert calls == {"-e": 1, "--background": 1, "check_endpoint_refs": 1, "read_results": 1}
