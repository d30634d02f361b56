"""The quality pipeline end to end: files written, numbers traceable, failures and Ctrl-C keep finished work."""

import csv
import re
import subprocess
import sys

import pytest

from bench.commands.quality import QualityRequest, quality_command
from bench.core.errors import MeasurementFailed, ServerError, UserError
from bench.datasets import load_dataset
from bench.datasets.sample import sample_dataset
from bench.quality.evaluation import evaluate_files
from bench.results.store import read_results
from bench.targets import registry
from bench.targets.base import Hit, QueryResult
from tests.paths import scifact


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    """A small BEIR folder written from a seeded sample of the bundled SciFact."""
    import json

    ds = sample_dataset(load_dataset(scifact(), "train"), max_queries=30, max_docs=200, seed=3)
    root = tmp_path_factory.mktemp("small")
    (root / "qrels").mkdir()
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}) + "\n" for d in ds.corpus.values())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in ds.queries.items())
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{r}\n" for q, docs in ds.qrels.items() for d, r in docs.items())
    )
    return root


class ScriptedTarget:
    """A target that fails, or is interrupted, on purpose; records whether close() ran."""

    closed = 0

    def __init__(self, spec, options):
        self.name, self.spec = spec.name, spec

    def prepare(self, dataset, progress):
        self.doc = next(iter(dataset.corpus))
        self.failing = dataset.evaluated_queries()[0]

    def search(self, queries, depth, progress):
        if self.spec.variant == "fail":
            raise ServerError("scripted", "connection refused", created=["kb-1"])
        if self.spec.variant == "interrupt":
            raise KeyboardInterrupt
        # "nulls": a silent-fallback lookalike: no scores, and one query fails.
        return [
            QueryResult(
                q,
                [Hit(self.doc, None)],
                0.01,
                error="HTTP 400" if q == self.failing else None,
                cost={"llm_calls": 2},
                warnings=["null-scores"],
            )
            for q in queries
        ]

    def describe(self):
        return {"scripted": self.spec.variant}

    def close(self):
        ScriptedTarget.closed += 1


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setitem(registry.TARGET_FACTORIES, "scripted", lambda spec, options: ScriptedTarget(spec, options))
    ScriptedTarget.closed = 0
    return ScriptedTarget


@pytest.mark.slow
def test_quality_writes_every_artifact_and_numbers_trace_back(small_dataset, tmp_path):
    out = tmp_path / "out"
    report = quality_command(QualityRequest(dataset=small_dataset, targets=["bm25", "dense"], out=out))
    assert report == out / "report.html"
    results = read_results(out / "results.jsonl")
    assert results.end.status == "complete"
    assert [t.name for t in results.targets] == ["bm25", "dense"]
    assert {(m.target, m.label) for m in results.metrics} == {
        (t, label) for t in ("bm25", "dense") for label in ("nDCG@10", "R@100", "MRR@10", "MAP@100")
    }
    assert len(results.comparisons) == 4
    # The run file on disk, scored independently, gives the number in the results file.
    for target in results.targets:
        from_file = evaluate_files(
            small_dataset / "qrels" / "test.tsv", out / target.run_file, ["ndcg_cut.10"], complete=True
        )
        assert from_file.means["ndcg_cut_10"] == results.metric(target.name, "ndcg_cut_10").mean
    rows = list(csv.DictReader((out / "per_query.csv").open()))
    assert len(rows) == 2 * 30
    html = report.read_text()
    assert "data:image/png;base64," in html
    assert not re.search(r"""(src|href)=["']?(https?:|//|plots/)""", html), "report.html must be self-contained"
    assert "| bm25 |" in (out / "report.md").read_text()


def test_anomalies_errors_and_cost_are_reported(small_dataset, tmp_path, scripted):
    out = tmp_path / "out"
    # A failed query is a failed measurement (scored as zero): said last, after every output is written.
    with pytest.raises(
        MeasurementFailed, match=r"^target scripted:nulls: 1 of 30 queries failed \(scored as zero; report: "
    ):
        quality_command(QualityRequest(dataset=small_dataset, targets=["scripted:nulls"], out=out))
    results = read_results(out / "results.jsonl")
    [target] = results.targets
    assert (target.errors, target.warnings, target.cost) == (1, {"null-scores": 30}, {"llm_calls": 2.0})
    assert target.scores_replaced
    assert "null-scores: 30" in (out / "report.md").read_text()
    assert (
        "**Status: complete, with failures.** Target **scripted:nulls**: 1 of 30 queries failed."
        in (out / "report.md").read_text()
    )
    for report in ("report.md", "report.html"):  # both reports say the engine's scores were not used
        assert "rank-derived scores were written" in (out / report).read_text(), report


def test_a_failing_target_keeps_finished_work_and_exits_with_a_user_error(small_dataset, tmp_path, scripted):
    out = tmp_path / "out"
    with pytest.raises(UserError, match=r"scripted: connection refused \(created so far: kb-1\)"):
        quality_command(QualityRequest(dataset=small_dataset, targets=["bm25", "scripted:fail", "dense"], out=out))
    results = read_results(out / "results.jsonl")
    assert [t.name for t in results.targets] == ["bm25"]
    assert results.metric("bm25", "ndcg_cut_10") is not None
    assert results.end.status == "failed" and "connection refused" in results.end.error
    assert (out / "runs" / "bm25.trec").exists() and (out / "report.html").exists()
    assert scripted.closed == 1


def test_ctrl_c_restores_and_keeps_finished_work(small_dataset, tmp_path, scripted):
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        quality_command(QualityRequest(dataset=small_dataset, targets=["bm25", "scripted:interrupt"], out=out))
    results = read_results(out / "results.jsonl")
    assert results.end.status == "interrupted" and [t.name for t in results.targets] == ["bm25"]
    assert scripted.closed == 1
    assert "interrupted" in (out / "report.md").read_text()


def test_a_cut_results_file_is_still_readable(small_dataset, tmp_path):
    out = tmp_path / "out"
    quality_command(QualityRequest(dataset=small_dataset, targets=["bm25"], out=out))
    text = (out / "results.jsonl").read_text()
    cut = text[: text.index('"record": "metrics"') + 5]  # a half-written line, as after a crash
    (out / "results.jsonl").write_text(cut)
    results = read_results(out / "results.jsonl")
    assert results.end is None and [t.name for t in results.targets] == ["bm25"] and not results.metrics


@pytest.mark.parametrize(
    "spec, words",
    [
        ("nosuch", "unknown kind 'nosuch'"),
        ("bm25:x", "unknown variant"),
        ("hybrid:weighted?bm25_weight=2", "bm25_weight must lie"),
        ("dense?colour=red", "unknown parameter"),
        ("bm25+rerank", "or --cross-encoder PATH"),
        ("bm25?k", "is not option=value"),
    ],
)
def test_bad_target_specs(small_dataset, tmp_path, spec, words):
    with pytest.raises(UserError, match=re.escape(words)):
        quality_command(QualityRequest(dataset=small_dataset, targets=[spec], out=tmp_path / "o"))


def test_depth_below_the_deepest_cutoff_is_refused(small_dataset, tmp_path):
    with pytest.raises(UserError, match="below the deepest cut-off"):
        quality_command(QualityRequest(dataset=small_dataset, targets=["bm25"], out=tmp_path / "o", depth=50))


def test_cli_quality_bad_dataset_is_one_line_exit_2(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "quality",
            "--dataset",
            str(tmp_path / "missing"),
            "-t",
            "bm25",
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"ragbench: error: {tmp_path / 'missing'}: no such file or folder"


@pytest.mark.slow  # loads the reference model (hybrid) in a subprocess
def test_cli_quality_runs_end_to_end(small_dataset, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "quality",
            "--dataset",
            str(small_dataset),
            "-t",
            "bm25",
            "-t",
            "hybrid:weighted?bm25_weight=0.3",
            "--out",
            str(tmp_path / "o"),
            "-m",
            "P@10",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"report: {tmp_path / 'o' / 'report.html'}"
    table = result.stdout[: result.stdout.index("paired significance")]
    assert "P@10" in table and "│ bm25 " in table and "│ hybrid:weighted?bm25_weight=0.3 " in table
    results = read_results(tmp_path / "o" / "results.jsonl")
    assert results.header.measures == ["P_10"] and results.targets[1].config["bm25_weight"] == 0.3


def test_secrets_in_a_spec_never_reach_results_or_reports(small_dataset, tmp_path, scripted):
    out = tmp_path / "out"
    with pytest.raises(MeasurementFailed, match="1 of 30 queries failed"):  # scripted:nulls fails one query
        quality_command(
            QualityRequest(
                dataset=small_dataset,
                out=out,
                targets=["scripted:nulls@http://user:hunter2@127.0.0.1:9/?api_key=hunter2&key_env=MY_KEY"],
            )
        )
    for path in out.rglob("*"):
        if path.is_file():
            assert b"hunter2" not in path.read_bytes(), path
    assert "key_env=MY_KEY" in read_results(out / "results.jsonl").targets[0].spec
