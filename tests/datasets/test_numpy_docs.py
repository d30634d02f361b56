"""builtin:numpy-docs, the demo's data set built from the installed numpy, and the tests' rule for ../shared."""

from __future__ import annotations

import json

import numpy
import pytest

import tests.paths
from bench.datasets import load_dataset, resolve_dataset_path
from bench.datasets.numpy_docs import numpy_docs_dataset, split_docstring
from bench.results.store import read_results
from tests.harness.cli import run_cli


def test_a_ufunc_signature_line_is_skipped_and_short_docstrings_left_out():
    doc = "add(x1, x2, /, out=None)\n\nAdd arguments element-wise.\n\nParameters\n----------\n" + "word " * 25
    entry = split_docstring("numpy.add", doc)
    assert entry is not None and entry.summary == "Add arguments element-wise."
    assert entry.body.startswith("Parameters") and "Add arguments" not in entry.body
    assert split_docstring("numpy.x", "Too short.\n\n" + "word " * 25) is None  # summary under 3 words
    assert split_docstring("numpy.x", "A long enough summary.\n\nSee numpy.sum.") is None  # body under 20 words
    assert split_docstring("numpy.x", "Only a summary line here.") is None


def test_the_built_set_is_a_valid_known_item_search_with_its_origin(cache_dir):
    dataset = load_dataset("builtin:numpy-docs")
    assert dataset.format == "beir" and dataset.split == "test"
    assert len(dataset.queries) > 300 and len(dataset.corpus) >= len(dataset.queries)
    for qid, text in dataset.queries.items():
        relevant = dataset.qrels[qid]
        assert relevant and all(doc_id in dataset.corpus for doc_id in relevant)
        # the query is its documents' summary, taken out of them: finding them is retrieval, not string matching
        assert all(not dataset.corpus[d].text.startswith(text) for d in relevant)
    assert dataset.corpus["numpy.linalg.norm"].title == "numpy.linalg.norm"
    origin = (resolve_dataset_path("builtin:numpy-docs") / "ORIGIN.md").read_text()
    assert f"numpy {numpy.__version__}" in origin and "BSD-3-Clause" in origin


def test_built_once_then_reused_and_the_same_from_scratch(cache_dir, tmp_path):
    first = numpy_docs_dataset()
    stamp = (first / "corpus.jsonl").stat().st_mtime_ns
    assert numpy_docs_dataset() == first and (first / "corpus.jsonl").stat().st_mtime_ns == stamp
    again = numpy_docs_dataset(tmp_path / "elsewhere")
    assert load_dataset(again).fingerprint() == load_dataset(first).fingerprint()  # deterministic


def test_what_another_library_did_to_numpys_docstrings_is_not_in_the_set(cache_dir, tmp_path, monkeypatch):
    """scipy, once imported, adds a section to `numpy.sinc`'s docstring: the set built after it held that text under
    the same name (bm25's nDCG@10 0.6429 instead of 0.6427). Built in a fresh interpreter, it is numpy's alone."""
    monkeypatch.setattr(numpy.sinc, "__doc__", (numpy.sinc.__doc__ or "") + "\n\nInjected by another library.")
    folder = numpy_docs_dataset(tmp_path / "after-import")
    assert "Injected by another library" not in (folder / "corpus.jsonl").read_text()
    assert "numpy.sinc" in load_dataset(folder).corpus


def test_an_unfinished_build_is_replaced_not_trusted(cache_dir):
    folder = numpy_docs_dataset()
    (folder / "ORIGIN.md").unlink()  # what a build killed before its last file leaves
    (folder / "queries.jsonl").write_text("garbage\n")
    assert numpy_docs_dataset() == folder
    assert load_dataset(folder).queries


def test_unknown_builtin_and_unwritable_cache_are_one_line(cache_dir, tmp_path, monkeypatch, capsys):
    code, _, err = run_cli(["datasets", "check", "builtin:nope"], monkeypatch, capsys)
    assert (
        code == 2
        and err.strip()
        == "ragbench: error: builtin:nope: unknown built-in data set (known: builtin:numpy-docs, builtin:python-docs)"
    )
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("RAGBENCH_CACHE", str(blocker))
    code, _, err = run_cli(["datasets", "check", "builtin:numpy-docs"], monkeypatch, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "RAGBENCH_CACHE" in err


@pytest.mark.slow
def test_demo_prints_its_results_and_the_three_engines_differ(cache_dir, tmp_path, monkeypatch, capsys):
    code, out, err = run_cli(["demo", "--out", str(tmp_path / "demo")], monkeypatch, capsys)
    assert code == 0, err
    for row in ("bm25", "dense", "hybrid"):
        assert any(line.split("│")[1:2] == [f" {row:<6} "] for line in out.splitlines()), out
    assert "paired significance" in out and "b better" in out and f"report: {tmp_path / 'demo' / 'report.html'}" in out
    results = read_results(tmp_path / "demo" / "results.jsonl")
    assert results.header.dataset["name"].startswith("numpy-docs-")
    # hybrid is better than each engine it fuses, with significance (Holm-corrected, as the report says)
    wins = {
        (c.a, c.b)
        for c in results.comparisons
        if c.measure == "ndcg_cut_10" and c.p_randomization_holm < 0.05 and c.mean_diff > 0
    }
    assert {("bm25", "hybrid"), ("dense", "hybrid")} <= wins, json.dumps([c.__dict__ for c in results.comparisons])


def test_shared_data_skips_outside_ci_and_fails_under_ci(tmp_path, monkeypatch):
    monkeypatch.setattr(tests.paths, "SHARED", tmp_path / "no-shared")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"needs .*no-shared/datasets/scifact-train"):
        tests.paths.scifact()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true but needs"):
        tests.paths.golden()
    (tmp_path / "no-shared" / "datasets" / "scifact-train").mkdir(parents=True)
    assert tests.paths.scifact() == tmp_path / "no-shared" / "datasets" / "scifact-train"
