"""A dense target's similarity is what its record says, whatever the server returns: against the TEI fixture with
the `unnormalised` fault (MiniLM without its Normalize module), cosine ranks and scores as the normalising server
does, the record says the served vectors were not unit length, and `?similarity=dot` is the dot product."""

from __future__ import annotations

import numpy as np

from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

CORPUS = {
    "d1": "The cat sat on the mat and looked out of the window at the birds in the garden.",
    "d2": "Cats",
    "d3": "A dog chased the ball across the park while children played football nearby.",
    "d4": "Stock markets fell sharply after the central bank raised interest rates again.",
    "d5": "Interest rates",
    "d6": "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in plants.",
}
QUERIES = {"q1": "where did the cat sit", "q2": "bank interest rate rise", "q3": "how plants make sugar", "q4": "dog"}
QRELS = [("q1", "d1", 1), ("q2", "d4", 1), ("q3", "d6", 1), ("q4", "d3", 1)]


def _run_scores(path) -> dict[tuple[str, str], float]:
    rows = (line.split() for line in path.read_text().splitlines() if line.strip())
    return {(row[0], row[2]): float(row[4]) for row in rows}


def test_cosine_over_an_unnormalising_server_equals_the_normalising_one(
    tmp_path, cache_dir, monkeypatch, capsys, tei_fixture
):
    dataset = write_beir(tmp_path / "d", CORPUS, QUERIES, QRELS)
    normal, raw = tei_fixture(), tei_fixture(faults=("unnormalised",))
    out = tmp_path / "out"
    args = ["quality", "--dataset", str(dataset), "--out", str(out), "-m", "nDCG@10"]
    args += ["-e", f"n=tei@{normal.url}", "-e", f"u=tei@{raw.url}"]
    args += ["-t", "n=dense?embedder=n", "-t", "u=dense?embedder=u", "-t", "udot=dense?embedder=u&similarity=dot"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 0, err
    results = read_results(out / "results.jsonl")
    targets = {t.name: t for t in results.targets}
    assert targets["n"].config["vectors_unit_length"] is True and targets["n"].warnings == {}
    for name, similarity in (("u", "cosine"), ("udot", "dot")):
        config = targets[name].config
        assert config["similarity"] == similarity and config["vectors_unit_length"] is False
        assert config["vector_norms"]["min"] > 1.5  # MiniLM's raw mean-pooled vectors
        assert targets[name].warnings == {"vectors-not-unit-length": len(QUERIES)}
    metric = {m.target: m for m in results.metrics}
    for qid in QUERIES:  # the same ranking: the same score
        assert abs(metric["u"].per_query[qid] - metric["n"].per_query[qid]) <= 1e-9
    runs = {name: _run_scores(out / targets[name].run_file) for name in targets}
    assert runs["u"].keys() == runs["n"].keys()
    # float32 vectors normalised by the server or here: the same cosines within float32 rounding.
    np.testing.assert_allclose([runs["u"][k] for k in runs["n"]], list(runs["n"].values()), rtol=1e-5, atol=1e-5)
    assert max(runs["udot"].values()) > 1.5  # the inner product of the vectors as served
