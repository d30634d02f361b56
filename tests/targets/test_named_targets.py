"""`--target NAME=SPEC`: the name is what results, run files and compare use; without it nothing changes."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.results.store import read_results
from bench.targets.registry import parse_target_spec
from tests.harness.cli import run_cli
from tests.paths import scifact


@pytest.mark.parametrize(
    "text, name, public",
    [
        ("bm25", "bm25", "bm25"),
        ("hybrid:weighted?bm25_weight=0.3", "hybrid:weighted?bm25_weight=0.3", "hybrid:weighted?bm25_weight=0.3"),
        ("prod=openwebui:hybrid@http://u:secret@host:8080", "prod", "openwebui:hybrid@http://***@host:8080"),
        ("a.b-c_1=dense?model=/models/x=y", "a.b-c_1", "dense?model=/models/x=y"),
        ("prod=bm25+rerank", "prod", "bm25+rerank"),
    ],
)
def test_names(text, name, public):
    spec = parse_target_spec(text)
    assert (spec.name, spec.public_text) == (name, public)


@pytest.mark.parametrize(
    "text, message",
    [
        ("=bm25", "name '' may hold only"),
        ("pr od=bm25", "name 'pr od' may hold only"),
        ("prod=", "nothing after 'prod='"),
        ("prod=nosuchkind", "unknown kind 'nosuchkind'"),
    ],
)
def test_bad_names(text, message):
    with pytest.raises(UserError, match=message):
        parse_target_spec(text)


def test_quality_writes_results_and_run_files_under_the_name(tmp_path, monkeypatch, capsys):
    code, _out, err = run_cli(
        [
            "quality",
            "--dataset",
            str(scifact()),
            "--split",
            "train",
            "--max-queries",
            "30",
            "--max-docs",
            "200",
            "-t",
            "prod=bm25",
            "-t",
            "bm25",
            "-m",
            "nDCG@10",
            "--out",
            str(tmp_path),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, err
    results = read_results(tmp_path / "results.jsonl")
    assert results.header.targets == ["prod", "bm25"]
    assert [(t.name, t.spec) for t in results.targets] == [("prod", "bm25"), ("bm25", "bm25")]
    assert {m.target for m in results.metrics} == {"prod", "bm25"}
    assert (tmp_path / "runs" / "prod.trec").read_text().split("\n")[0].endswith(" prod")
    assert (tmp_path / "runs" / "bm25.trec").is_file()
    # the same system under two names: identical per-query scores
    assert results.metric("prod", "ndcg_cut_10").per_query == results.metric("bm25", "ndcg_cut_10").per_query
