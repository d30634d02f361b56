"""Suite files and `ragbench run`: the whole of a suite, then its gate, as one command."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import partial

import pytest

from bench.cli.suite import load_suite
from tests.commands.helpers import scifact_quality
from tests.harness.beir import write_beir
from tests.paths import REPO


def small_suite() -> str:
    """Two bm25 targets on a SciFact sample (from ../shared: built per test, so a clone without it skips)."""
    return """
[suite]
name = "small"
""" + scifact_quality(
        max_queries=60,
        max_docs=300,
        max_drop=0.02,
        targets='prod = "bm25"\nother = "bm25"',
        measures='["nDCG@10", "R@100"]',
    )


@pytest.fixture
def cli(ragbench):
    return partial(ragbench, "run")


def test_a_suite_runs_then_gates_against_its_baseline(tmp_path, cli):
    suite = tmp_path / "small.toml"
    suite.write_text(small_suite())
    code, out, err = cli(suite, "--out", tmp_path / "base", "--junit", tmp_path / "first.xml")
    assert code == 0, err
    assert "!! no baseline given: nothing is gated" in out
    assert ET.parse(tmp_path / "first.xml").getroot().get("tests") == "0"  # the first night: a valid, empty report
    assert (tmp_path / "base" / "quality-scifact" / "runs" / "prod.trec").is_file()
    assert (tmp_path / "base" / "quality-scifact" / "report.html").is_file()
    code, out, err = cli(
        suite,
        "--out",
        tmp_path / "cur",
        "--baseline",
        tmp_path / "base",
        "--junit",
        tmp_path / "j.xml",
        "--benchmark-json",
        tmp_path / "b.json",
    )
    assert code == 0, out + err
    # Only nDCG@10 has a max_drop: R@100 is reported, not gated (and not in the multiple-comparison family).
    assert "ragbench compare: pass (2 checks, none regressed; 2 not gated, each says why)" in out
    names = {c.get("name") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert names == {"prod nDCG@10", "prod R@100", "other nDCG@10", "other R@100"}
    assert (tmp_path / "b.json").is_file()


def test_a_regression_in_a_suite_exits_1(tmp_path, cli, worse_kind):
    base_suite, worse_suite = tmp_path / "base.toml", tmp_path / "worse.toml"
    # The same name now points at a much weaker system: bm25 that ignores term frequency saturation badly.
    # The same name now points at a system made worse: 10% of queries lose their relevant documents.
    worse_suite.write_text(
        small_suite().replace('prod = "bm25"', 'prod = "worse"').replace("max_queries = 60", "max_queries = 200")
    )
    base_suite.write_text(small_suite().replace("max_queries = 60", "max_queries = 200"))
    assert cli(base_suite, "--out", tmp_path / "base")[0] == 0
    code, out, err = cli(worse_suite, "--out", tmp_path / "cur", "--baseline", tmp_path / "base")
    assert code == 1, out + err
    assert "FAIL  quality: quality-scifact prod nDCG@10" in out


def test_the_example_suites_are_valid(monkeypatch):
    for var in ("OPENWEBUI_URL", "LIGHTRAG_URL", "TEI_URL"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    local = load_suite(REPO / "suites" / "local.toml")
    assert [j.request.targets for j in local.quality] == [["bm25=bm25", "dense=dense", "hybrid=hybrid"]]
    assert str(local.quality[0].request.dataset) == "builtin:numpy-docs"
    real = load_suite(REPO / "suites" / "real-stack.toml")
    assert real.quality[0].request.targets[0] == "prod-hybrid=openwebui:hybrid@http://127.0.0.1:9"
    assert real.load[0].request.batch == "1,8,32" and real.load[1].request.burst == 512
    assert real.gate.min_throughput_ratio == 0.9 and str(real.gate.max_p99_increase) == "15%"


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("[gate]\nalpha = \n", 2, "malformed TOML"),
        ('[suite]\nname = "x"\n[gates]\nalpha = 0.1\n', 3, "unknown section [gates]"),
        ("[gate]\nalpha = 0.05\nmax_drops = 1\n", 3, "gate: unknown key 'max_drops'"),
        ('[gate]\nalpha = "high"\n', 2, "gate.alpha: expected number"),
        ("[gate]\nalpha = 1.5\n", 2, "gate.alpha: must be between 0 and 1"),
        ('[gate]\nmax_drop = { "nDCG@10" = "lots" }\n', 2, "gate.max_drop: --max-drop 'lots': expected a number"),
        ('[gate]\nprimary = [":x"]\n', 2, "gate.primary: --primary ':x': expected MEASURE or TARGET:MEASURE"),
        ('[targets]\nprod = "openwebui@http://user:pw@host"\n', 2, "targets.prod: credentials in a spec"),
        ('[endpoints]\ntei = "tei@http://h?api_key=abc"\n', 2, "endpoints.tei: credentials in a spec"),
        ('[datasets.d]\npath = "x"\napi_key = "abc"\n', 3, "secrets come from the environment only"),
        (
            '[targets]\nprod = "openwebui@${RAGBENCH_TEST_UNSET_VAR}"\n',
            2,
            "environment variable RAGBENCH_TEST_UNSET_VAR is not set",
        ),
        ('[targets]\nbm25 = "bm25"\n\n[[quality]]\ndataset = "nope"\n', 5, "dataset 'nope' is not in [datasets]"),
        (
            '[datasets.d]\npath = "x"\n[targets]\nbm25 = "bm25"\n[[quality]]\ndataset = "d"\ntargets = ["bm26"]\n',
            7,
            "unknown target 'bm26'",
        ),
        ('[suite]\nname = "x"\n', None, "nothing to run"),
        (
            '[datasets.d]\npath = "x"\n[targets]\nb = "bm25"\n[[quality]]\ndataset = "d"\nname = ".."\n',
            7,
            "quality #1: name '..' may hold only letters",
        ),
        ("quality = 3\n", 1, "quality must be written [[quality]]"),
    ],
)
def test_bad_suites_give_file_line_and_one_message(tmp_path, cli, text, line, message):
    write_beir(tmp_path / "x", {"d1": "cats"}, {"q1": "cats"}, [("q1", "d1", 1)])  # `path = "x"`: a real dataset
    suite = tmp_path / "bad.toml"
    suite.write_text(text)
    code, out, err = cli(suite)
    assert (code, out) == (2, "")
    where = f"{suite}:{line}: " if line else f"{suite}: "
    assert err.startswith(f"ragbench: error: {where}") and message in err and err.count("\n") == 1, err


def test_a_suites_primary_names_the_gated_family(tmp_path):
    write_beir(tmp_path / "x", {"d1": "cats"}, {"q1": "cats"}, [("q1", "d1", 1)])
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[gate]\nprimary = ["prod:nDCG@10", "R@100"]\n[datasets.d]\npath = "x"\n'
        '[targets]\nprod = "bm25"\n[[quality]]\ndataset = "d"\n'
    )
    assert load_suite(suite).gate.primary == (("prod", "ndcg_cut_10"), (None, "recall_100"))


def test_a_missing_or_undecodable_suite_file(tmp_path, cli):
    code, _, err = cli(tmp_path / "none.toml")
    assert code == 2 and "no such suite file" in err
    (tmp_path / "latin.toml").write_bytes(b'[suite]\nname = "caf\xe9"\n')
    code, _, err = cli(tmp_path / "latin.toml")
    assert code == 2 and err.count("\n") == 1


def test_a_missing_baseline_is_said_before_anything_runs(tmp_path, cli):
    suite = tmp_path / "small.toml"
    suite.write_text(small_suite())
    code, _out, err = cli(suite, "--out", tmp_path / "cur", "--baseline", tmp_path / "nothing")
    assert code == 2 and "no such baseline folder" in err
    assert not (tmp_path / "cur").exists()


def test_an_earlier_run_in_out_is_kept_unless_overwrite(tmp_path, cli):
    suite = tmp_path / "small.toml"
    suite.write_text(small_suite())
    assert cli(suite, "--out", tmp_path / "out")[0] == 0
    code, out, err = cli(suite, "--out", tmp_path / "out")
    assert code == 2 and "quality-scifact" in out + err
    assert cli(suite, "--out", tmp_path / "out", "--overwrite")[0] == 0
