"""What a target spec may say and what local engines report: only a kind's own parameters, each one
taking effect and recorded; no latency percentiles made of identical copies of a batch's mean."""

from __future__ import annotations

import json
import re

import pytest

from bench.core.errors import UserError
from bench.datasets.model import Dataset, Document
from bench.quality.config import QualityConfig
from bench.quality.metrics import parse_measure
from bench.quality.pipeline import run_quality
from bench.quality.under_load import loaded_name
from bench.results.lifecycle import Output
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec


def tiny() -> Dataset:
    corpus = {
        "d1": Document("d1", "", "running shoes for running and more running"),
        "d2": Document("d2", "", "the run of the river"),
        "d3": Document("d3", "", "a quiet evening with tea, with friends and with books and with more tea"),
    }
    return Dataset(
        "tiny", corpus, {"q1": "runs", "q2": "with tea"}, {"q1": {"d2": 1}, "q2": {"d3": 1}}, "memory", "beir"
    )


@pytest.mark.parametrize(
    "spec",
    [
        "bm25?bm25_weight=0.5",
        "bm25?model=/x",
        "dense?k1=1.2",
        "dense?bm25_weight=0.5",
        "hybrid?bm25_weight=0.5",
        "hybrid:rrf?bm25_weight=0.5",
        "hybrid?rerank_depth=5",
        "bm25?k1=-1",
        "bm25?b=2",
        "bm25?stemmer=klingon",
        "bm25?stopwords=elvish",
        "bm25?k1=fast",
    ],
)
def test_a_parameter_the_kind_would_ignore_is_an_error(spec):
    with pytest.raises(UserError, match=re.escape(f"target {spec!r}: ")):
        build_target(parse_target_spec(spec), TargetOptions())


def _ranking(spec: str) -> tuple[dict, dict]:
    target = build_target(parse_target_spec(spec), TargetOptions())
    target.prepare(tiny(), no_progress)
    results = target.search(tiny().queries, 10, no_progress)
    return {r.qid: [(h.doc_id, h.score) for h in r.hits] for r in results}, target.describe()


def test_bm25_parameters_take_effect_and_are_recorded():
    default, described = _ranking("bm25")
    assert (described["k1"], described["b"], described["stemmer"], described["stopwords"]) == (
        1.5,
        0.75,
        "snowball-english",
        "bm25s english",
    )
    assert {d for d, _ in default["q1"]} == {"d1", "d2"}  # "runs", "running" and "run" share a stem
    unstemmed, described = _ranking("bm25?stemmer=none")
    assert unstemmed["q1"] == [] and described["stemmer"] == "none"
    with_stopwords, described = _ranking("bm25?stopwords=none")
    assert described["stopwords"] == "none" and default["q2"] != with_stopwords["q2"]  # "with" now counts
    tuned, described = _ranking("bm25?k1=0.2&b=0.1")
    assert (described["k1"], described["b"]) == (0.2, 0.1)
    assert [d for d, _ in tuned["q1"]] == [d for d, _ in default["q1"]] and tuned["q1"] != default["q1"]


def test_batch_engines_report_no_per_query_latency(tmp_path):
    """bm25 ranks every query in one batch: the results hold its batch time, never p50 = p99 = the mean."""
    target = build_target(parse_target_spec("bm25"), TargetOptions())
    target.prepare(tiny(), no_progress)
    assert [r.latency_s for r in target.search(tiny().queries, 10, no_progress)] == [None, None]
    results = run_quality(
        tiny(),
        [parse_target_spec("bm25")],
        TargetOptions(),
        QualityConfig([parse_measure("P@1")], depth=10),
        Output(tmp_path),
    )
    records = [json.loads(line) for line in results.path.read_text().splitlines()]
    [record] = [r for r in records if r["record"] == "target"]
    assert record["latency_ms"] == {} and record["search_seconds"] > 0
    assert [r["latency_ms"] for r in records if r["record"] == "query"] == [None, None]


def test_a_reranked_targets_label_reads_the_way_its_spec_is_written():
    """`+rerank` where the user wrote it, before the parameters (not `hybrid?embedder=emb&reranker=rr+rerank`)."""
    spec = parse_target_spec("hybrid+rerank?reranker=rr&embedder=emb")
    assert spec.name == "hybrid+rerank?embedder=emb&reranker=rr"
    assert loaded_name(spec.name, 0.0) == "hybrid+rerank?embedder=emb&reranker=rr@bg0"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        (
            "openwebui@localhost:19023",
            "URL 'localhost:19023' has no scheme: write http://localhost:19023 (or https://)",
        ),
        ("lightrag@ftp://host:1", "URL 'ftp://host:1': scheme 'ftp' is not http or https"),
    ],
)
def test_a_target_url_without_its_scheme_is_one_line_before_anything_is_written(
    fruit, tmp_path, ragbench, target, said
):
    code, _, err = ragbench("quality", "--dataset", fruit, "-t", target, "--out", tmp_path / "out")
    assert code == 2 and err.strip().splitlines() == [f"ragbench: error: target {target!r}: {said}"]
    assert not (tmp_path / "out").exists()
