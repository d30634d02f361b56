"""Composed targets (hybrid fusions, `+rerank` over any first stage) against endpoints that fail only for queries,
after an ingest that worked: a query a part failed is that query's error (scored zero, counted, exit 3), never
the other part's ranking; a part whose server stops answering ends the target at its first query, whatever
the composition."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from bench.core.http import ServerUnreachable
from bench.datasets.model import Dataset, Document
from bench.endpoints import spec as endpoint_spec
from bench.endpoints.base import Scores
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import run_from_results, trec_order
from bench.results.store import read_results
from bench.targets.base import Hit, QueryResult, TargetFailed, compose, no_progress
from bench.targets.rerank_stage import RerankStage
from tests.harness.beir import FRUIT_CORPUS, FRUIT_QRELS, FRUIT_QUERIES
from tests.harness.cli import run_cli
from tests.harness.stubs import DROP, JsonStub, RawBody

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]
# Every composition of a dense part served by `emb`; each fails every query when its dense part does.
COMPOSED = [
    "hybrid?embedder=emb",
    "hybrid:weighted?embedder=emb&bm25_weight=0.3",
    "hybrid:openwebui?embedder=emb&bm25_weight=0.5",
    "hybrid+rerank?embedder=emb&reranker=rr",
]
HTML = RawBody("text/html", b"<!doctype html><html><body><h1>Welcome</h1></body></html>")


def _vector(text: str) -> list[float]:
    return [1.0 + text.split().count(word) for word in WORDS]


def _embedder(fault: str, hold: threading.Event) -> JsonStub:
    """A TEI-shaped /embed that answers the ingest (and the cache probe) and fails every query (a request of one
    query text) by `fault`: HTTP 500, a NaN, one dimension too many, an HTML page, or no answer (`hung`)."""

    def embed(raw: bytes):
        inputs = json.loads(raw)["inputs"]
        vectors = [_vector(text) for text in inputs]
        if not (len(inputs) == 1 and inputs[0] in FRUIT_QUERIES.values()):
            return 200, vectors
        if fault == "hung":
            hold.wait(30)  # bounded: the test releases it when done
            return DROP
        return {
            "500": (500, {"error": "boom", "error_type": "Backend"}),
            "nan": (200, [[float("nan"), *vectors[0][1:]]]),
            "dimension": (200, [[*vectors[0], 0.5]]),
            "html": (200, HTML),
        }[fault]

    info = {
        "model_id": "m",
        "model_sha": "s",
        "model_dtype": "float32",
        "model_type": {"embedding": {"pooling": "mean"}},
    }
    return JsonStub({("POST", "/embed"): embed, ("GET", "/info"): (200, {**info, "max_client_batch_size": 64})})


def _reranker(hold: threading.Event | None = None) -> JsonStub:
    """A Cohere-shaped /rerank scoring by word overlap; with `hold`, it never answers."""

    def rerank(raw: bytes):
        if hold is not None:
            hold.wait(30)
            return DROP
        body = json.loads(raw)
        words = set(body["query"].split())
        scored = [(i, float(len(words & set(d.split())))) for i, d in enumerate(body["documents"])]
        ranked = sorted(scored, key=lambda pair: -pair[1])
        return 200, {"results": [{"index": i, "relevance_score": s} for i, s in ranked]}

    return JsonStub({("POST", "/rerank"): rerank})


def _error_lines(err: str) -> list[str]:
    prefix = "ragbench: error: "
    return [line[len(prefix) :] for line in err.splitlines() if line.startswith(prefix)]


def _quality(fruit, out, endpoints: list[str], targets: list[str], monkeypatch, capsys):
    args = ["quality", "--dataset", str(fruit), "--out", str(out), "-m", "nDCG@10"]
    for endpoint in endpoints:
        args += ["-e", endpoint]
    for target in targets:
        args += ["-t", target]
    return run_cli(args, monkeypatch, capsys)


@pytest.mark.parametrize("fault", ["500", "nan", "dimension", "html"])
def test_a_query_a_part_failed_is_that_querys_error_in_every_composition(fruit, tmp_path, monkeypatch, capsys, fault):
    hold = threading.Event()
    embed, rerank = _embedder(fault, hold), _reranker()
    out = tmp_path / "out"
    endpoints = [f"emb=tei@{embed.url}", f"rr=cohere@{rerank.url}"]
    code, _, err = _quality(fruit, out, endpoints, ["dense?embedder=emb", "bm25", *COMPOSED], monkeypatch, capsys)
    embed.stop()
    rerank.stop()
    results = read_results(out / "results.jsonl")
    names = {t.name: t for t in results.targets}
    failed = [name for name, t in names.items() if t.errors]
    assert code == 3 and failed == ["dense?embedder=emb", *(n for n in names if n.startswith("hybrid"))], err
    [line] = _error_lines(err)
    assert line.count("4 of 4 queries failed") == 5 and all(f"target {n}: 4 of 4" in line for n in failed), err
    metric = {m.target: m for m in results.metrics}
    assert metric["bm25"].mean > 0  # the lexical part alone ranks well: a fusion that hid the failure would score
    for name in failed:
        assert names[name].status == "ok" and names[name].errors == 4
        assert metric[name].mean == 0.0 and set(metric[name].per_query.values()) == {0.0}
    for query in results.queries:
        if query.target.startswith("hybrid"):
            assert query.hits == 0 and query.error and "dense failed: emb: " in query.error, query.error
        if "+rerank" in query.target:
            assert query.error.startswith("first stage failed: dense failed: emb: ")


@pytest.fixture
def short_timeout(monkeypatch):
    """Endpoints that give up after half a second (the command line's are 120 s), opened wherever targets open them."""
    opened = endpoint_spec.open_endpoint
    monkeypatch.setattr(
        "bench.targets.endpoint_refs.open_endpoint", lambda spec, **given: opened(spec, timeout_s=0.5, **given)
    )


def test_a_part_that_stops_answering_ends_every_composition_at_its_first_query(
    fruit, tmp_path, monkeypatch, capsys, short_timeout
):
    hold = threading.Event()
    embed, rerank, silent = _embedder("hung", hold), _reranker(), _reranker(hold)
    out = tmp_path / "out"
    endpoints = [f"emb=tei@{embed.url}", f"rr=cohere@{rerank.url}", f"gone=cohere@{silent.url}"]
    targets = ["dense?embedder=emb", *COMPOSED, "bm25+rerank?reranker=gone", "bm25"]
    try:
        code, _, err = _quality(fruit, out, endpoints, targets, monkeypatch, capsys)
    finally:
        hold.set()
        for server in (embed, rerank, silent):
            server.stop()
    results = read_results(out / "results.jsonl")
    statuses = {t.name: t.status for t in results.targets}
    assert code == 3 and list(statuses.values()) == ["failed"] * (len(targets) - 1) + ["ok"], err
    for target in results.targets[:-1]:
        assert "no complete answer to POST " in (target.error or "") and target.queries == 0, target.error
    # Each target sent its first query and no other: none waited out a timeout per query.
    asked = [json.loads(raw)["inputs"][0] for _, path, _, raw in embed.requests if path == "/embed"]
    assert [text for text in asked if text in FRUIT_QUERIES.values()] == [FRUIT_QUERIES["q1"]] * (len(COMPOSED) + 1)
    assert len([path for _, path, _, _ in silent.requests]) == 1


def test_compose_makes_only_queries_whose_parts_all_answered():
    lexical = [QueryResult("a", [Hit("d1", 1.0)], None), QueryResult("b", [Hit("d2", 1.0)], None, cost={"calls": 1})]
    dense = [QueryResult("b", [], None, error="emb: HTTP 500", cost={"calls": 2})]
    made = list(compose(["a", "b"], {"bm25": lexical, "dense": dense}, lambda qid, parts: parts["bm25"]))
    assert [(r.qid, r.error, r.hits, r.cost) for r in made] == [
        ("a", "dense gave no result", [], {}),
        ("b", "dense failed: emb: HTTP 500", [], {"calls": 3.0}),
    ]


class _FirstStage:
    """A first stage that ranks d1, d2, d3 for every query and, with `ends_after`, ends (its server gone) after
    that many queries, keeping them, as the remote targets' `run_queries` does."""

    name = "first"

    def __init__(self, ends_after: int | None = None, ranking: tuple[str, ...] = ("d1", "d2", "d3")):
        self.ends_after = ends_after
        self.ranking = ranking

    def prepare(self, dataset, progress) -> None:
        pass

    def search(self, queries, depth, progress):
        results = [
            QueryResult(qid, [Hit(d, 1.0 / i) for i, d in enumerate(self.ranking[:depth], 1)], 0.1) for qid in queries
        ]
        if self.ends_after is not None:
            raise TargetFailed("first: gone", results[: self.ends_after])
        return results

    def describe(self):
        return {}

    def close(self) -> None:
        pass


class _Reverser:
    """A reranker that reverses the order it is given; it stops answering after `answers` calls."""

    name = "rev"

    def __init__(self, answers: int = 1000):
        self.answers = answers

    def rerank(self, query, texts):
        self.answers -= 1
        if self.answers < 0:
            raise ServerUnreachable("rev", "no answer to POST /rerank within 0.5 s")
        return Scores(np.arange(len(texts), dtype=np.float32), list(range(len(texts)))[::-1], [])

    def describe(self):
        return {"kind": "stand-in"}

    def close(self) -> None:
        pass


def _stage(first: _FirstStage, reranker: _Reverser, rerank_depth: int = 10) -> RerankStage:
    stage = RerankStage(first, reranker, depth=rerank_depth, name="first+rerank", per_query=False)
    stage.prepare(
        Dataset("t", {d: Document(d, "", d) for d in FRUIT_CORPUS}, FRUIT_QUERIES, {}, source="memory", format="jsonl"),
        no_progress,
    )
    return stage


def test_queries_a_first_stage_finished_before_it_ended_are_reranked_never_kept_in_its_order():
    with pytest.raises(TargetFailed) as ended:
        _stage(_FirstStage(ends_after=2), _Reverser()).search(FRUIT_QUERIES, 10, no_progress)
    assert str(ended.value) == "first: gone"
    assert [(r.qid, [h.doc_id for h in r.hits]) for r in ended.value.finished] == [
        ("q1", ["d3", "d2", "d1"]),
        ("q2", ["d3", "d2", "d1"]),
    ]


def test_a_reranker_that_stops_answering_ends_the_target_keeping_what_it_reranked():
    with pytest.raises(TargetFailed, match="no answer to POST /rerank") as ended:
        _stage(_FirstStage(), _Reverser(answers=3)).search(FRUIT_QUERIES, 10, no_progress)
    assert [r.qid for r in ended.value.finished] == ["q1", "q2", "q3"]
    assert all(not r.error and r.hits[0].doc_id == "d3" for r in ended.value.finished)


@pytest.mark.parametrize("depth", [6, 4])
def test_ranks_below_the_rerank_depth_keep_the_first_stages_order_after_the_reranked_head(depth):
    """PyTerrier's `% k >> reranker`: the head of 3 reversed, d4..d6 after it in the first stage's order, so the
    reranked ranking holds the same documents and its recall past the rerank depth is the first stage's."""
    first = _FirstStage(ranking=("d1", "d2", "d3", "d4", "d5", "d6"))
    reranked = _stage(first, _Reverser(), rerank_depth=3).search(FRUIT_QUERIES, depth, no_progress)
    assert [h.doc_id for h in reranked[0].hits] == ["d3", "d2", "d1", "d4", "d5", "d6"][:depth]
    run, replaced = run_from_results(reranked)
    assert not replaced  # the tail's scores continue below the head's: trec_eval's order is this order
    assert [d for d, _ in trec_order(run["q1"])] == ["d3", "d2", "d1", "d4", "d5", "d6"][:depth]
    qrels = {qid: {doc: 1} for qid, doc, _ in FRUIT_QRELS}
    recall = parse_measure(f"R@{depth}")
    plain, _ = run_from_results(first.search(FRUIT_QUERIES, depth, no_progress))
    assert evaluate(qrels, run, [recall]).means == pytest.approx(evaluate(qrels, plain, [recall]).means)
