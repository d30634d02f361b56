"""An Open WebUI or LightRAG target's parameters are typed and checked when its spec is parsed (issue 37): a bad
value is one line and exit 2 before the dataset is loaded (quality) or the meter is started (ingest)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.core.errors import UserError
from bench.targets.lightrag import LightRAGSettings
from bench.targets.openwebui import OpenWebUISettings
from bench.targets.registry import parse_target_spec
from tests.harness.cli import run_cli


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("openwebui@http://h:1?bm25_weight=abc", "bm25_weight='abc' is not a number"),
        ("openwebui@http://h:1?bm25_weight=2", "bm25_weight must lie in [0.0, 1.0]"),
        ("openwebui:sideways@http://h:1", "variant 'sideways' unknown"),
        ("openwebui:rerank@http://h:1", "the rerank variant needs reranker_url=URL&reranker_model=NAME"),
        ("openwebui@http://h:1?meter_nest=a", "meter_nest"),
        ("lightrag@http://h:1?cleanup=maybe", "cleanup='maybe' is not a boolean"),
        ("lightrag@http://h:1?top_k=0", "top_k must be at least 1"),
        ("lightrag:sideways@http://h:1", "mode 'sideways' unknown"),
    ],
)
def test_a_bad_parameter_is_refused_by_the_parse(spec, said):
    with pytest.raises(UserError) as info:
        parse_target_spec(spec)
    assert said in str(info.value) and "\n" not in str(info.value)


def test_the_parse_keeps_the_typed_settings_and_a_replaced_spec_is_checked_again():
    spec = parse_target_spec("openwebui:hybrid@http://h:1?bm25_weight=0.3&max_chunks=40")
    assert isinstance(spec.settings, OpenWebUISettings)
    assert (spec.settings.bm25_weight, spec.settings.max_chunks) == (0.3, 40)
    assert isinstance(parse_target_spec("lightrag@http://h:1?rerank=on").settings, LightRAGSettings)
    assert replace(spec, params={"kb": "other"}).settings is None  # not the settings of other params


def test_quality_refuses_a_bad_target_parameter_before_the_dataset_loads(tmp_path, monkeypatch, capsys):
    import bench.commands.quality as quality

    def never(*args, **kwargs):
        raise AssertionError("the dataset was loaded before the target spec was checked")

    monkeypatch.setattr(quality, "load_dataset", never)
    out = tmp_path / "out"
    args = ["quality", "--dataset", str(tmp_path / "absent"), "-t", "openwebui@http://127.0.0.1:9?bm25_weight=abc"]
    code, _, stderr = run_cli([*args, "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "bm25_weight='abc' is not a number" in stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()


def test_ingest_refuses_a_bad_target_parameter_before_the_meter_starts(tmp_path, monkeypatch, capsys):
    import bench.ingest.run as ingest_run

    def never(*args, **kwargs):
        raise AssertionError("the meter started before the target spec was checked")

    monkeypatch.setattr(ingest_run, "start_meter", never)
    monkeypatch.setenv("OPENWEBUI_API_KEY", "sk-test")
    out = tmp_path / "out"
    target = "openwebui@http://127.0.0.1:9?concurrency=zero"
    args = ["ingest", "--dataset", str(tmp_path / "absent"), "-t", target, "--meter-upstream", "http://127.0.0.1:9"]
    code, _, stderr = run_cli([*args, "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "concurrency='zero' is not an integer" in stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()
