"""A target that ranks fewer documents than a measure's cut-off (an app that answers only its top k): the measure is
said to be "over N documents" in the results file, the tables, the report and `compare`, and is never tested
against a ranking of another length."""

from __future__ import annotations

import json

import pytest

from bench.targets import registry
from bench.targets.base import QueryResult
from tests.harness.beir import write_beir

TOP = 3  # what the short target answers per query


class _TopK:
    """A real bm25 that answers only its top `TOP` documents, as an app with `k` does."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name

    def prepare(self, dataset, progress):
        self.inner.prepare(dataset, progress)

    def search(self, queries, depth, progress):
        return [QueryResult(r.qid, r.hits[:TOP], r.latency_s) for r in self.inner.search(queries, depth, progress)]

    def describe(self):
        return {**self.inner.describe(), "answers": TOP}

    def close(self):
        self.inner.close()


@pytest.fixture
def short_data(tmp_path, monkeypatch):
    from bench.targets.bm25_engine import BM25Engine

    monkeypatch.setitem(registry.TARGET_FACTORIES, "top", lambda spec, options: _TopK(BM25Engine(name=spec.name)))
    corpus = {f"d{i:02d}": "apple " * (1 + i % 4) + f"word{i} common" for i in range(24)}
    queries = {f"q{i}": f"apple word{i} word{i + 5} word{i + 9}" for i in range(8)}
    qrels = [(f"q{i}", f"d{i + 9:02d}", 1) for i in range(8)] + [(f"q{i}", f"d{i:02d}", 1) for i in range(8)]
    return write_beir(tmp_path / "data", corpus, queries, qrels)


def _records(folder, kind):
    lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    return [r for r in lines if r["record"] == kind]


def test_a_measure_past_a_rankings_length_is_labelled_and_not_tested(short_data, tmp_path, ragbench):
    out = tmp_path / "out"
    code, stdout, _ = ragbench(
        "quality", "--dataset", short_data, "-t", "bm25", "-t", "short=top", "-m", "nDCG@3", "-m", "R@10", "--out", out
    )
    assert code == 0
    ranked = {(m["target"], m["label"]): m.get("ranked") for m in _records(out, "metrics")}
    assert ranked == {("bm25", "nDCG@3"): None, ("bm25", "R@10"): None, ("short", "nDCG@3"): None, ("short", "R@10"): 3}
    assert [(c["measure"], c["a"], c["b"]) for c in _records(out, "comparison")] == [("ndcg_cut_3", "bm25", "short")]
    said = "R@10 not tested between bm25 (R@10 over its full ranking) and short (R@10 over 3 documents)"
    assert said in " ".join(stdout.split())
    report = (out / "report.md").read_text()
    assert "over 3 documents |" in report and said.replace("bm25", "`bm25`").replace("short (", "`short` (") in report

    # compare: the same name over a full ranking in the baseline and 3 documents now is not tested, and said.
    base = tmp_path / "base"
    assert ragbench("quality", "--dataset", short_data, "-t", "x=bm25", "-m", "R@10", "--out", base)[0] == 0
    cur = tmp_path / "cur"
    assert ragbench("quality", "--dataset", short_data, "-t", "x=top", "-m", "R@10", "--out", cur)[0] == 0
    stdout = " ".join(ragbench("compare", base, cur, "--max-drop", "0.01")[1].split())
    assert "x R@10: not tested: R@10 over its full ranking in the baseline, over 3 documents now" in stdout
    again = tmp_path / "again"
    assert ragbench("quality", "--dataset", short_data, "-t", "x=top", "-m", "R@10", "--out", again)[0] == 0
    code, stdout, _ = ragbench("compare", cur, again, "--max-drop", "0.01")
    assert code == 0 and "x R@10 over 3 documents: " in stdout  # one length on both sides: tested, and said
