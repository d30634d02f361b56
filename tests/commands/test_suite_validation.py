"""A suite file is checked whole before any job runs, each value by its command's own checks, every problem
at its line; and a suite's --out is treated as every command treats its own: an earlier run is refused
before anything runs, and --overwrite reaches every job, whatever its kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.results.store import read_results
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

# A quality entry that would run first (and create --out), then identity and load entries on the
# in-process reference model.
SUITE = """[datasets.d]
path = "data"

[targets]
bm25 = "bm25"

[endpoints]
ref = "reference"
ref2 = "reference?batch=1"

[[quality]]
dataset = "d"
measures = ["P@2"]
depth = 5

[[identity]]
endpoints = ["ref", "ref2"]
texts = "texts.txt"

[[load]]
endpoints = ["ref"]
requests = 3
warmup = "0s"
texts = "texts.txt"
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_beir(
        tmp_path / "data",
        {"d1": "cats purr", "d2": "dogs bark", "d3": "birds sing"},
        {"q1": "cats", "q2": "dogs"},
        [("q1", "d1", 1), ("q2", "d2", 1)],
    )
    # 24 texts: enough for every identity check to judge (tests/identity/test_identity_verdicts.py)
    words = (
        "cats dogs bread rome light trade mats rain snow wind iron gold salt wool silk corn rice tea milk wine oak "
        "pine sand clay"
    )
    (tmp_path / "texts.txt").write_text("".join(f"text number {i} about {w}\n" for i, w in enumerate(words.split())))
    return tmp_path


# (lines appended to the suite above: the last entry is [[load]]; the offending line; words of the message)
BAD = [
    ("batch = [1.5, 4]", "batch = [1.5, 4]", "load #1: --batch '1.5,4': expected whole numbers from 1"),
    ("batch = [-1]", "batch = [-1]", "load #1: --batch '-1'"),
    ("rate = [inf]", "rate = [inf]", "load #1: --rate 'inf'"),
    ("max_inflight = 4", "max_inflight = 4", "load #1: --max-inflight caps the open loop"),
    ("repeat = 0", "repeat = 0", "load #1: --repeat 0: expected a whole number from 1 to 1,000"),
    ('\n[gate]\ninconclusive = "maybe"', 'inconclusive = "maybe"', "gate.inconclusive: inconclusive 'maybe'"),
    ('\n[gate]\ncalibration = ["aa"]', 'calibration = ["aa"]', "gate.calibration: "),
    ('\n[gate]\ncalibration = ["data"]', 'calibration = ["data"]', "--calibration: give two A/A runs at least"),
    ('\n[gate]\ncalibration = ["data", "data"]', 'calibration = ["data", "data"]', "no results.jsonl in this folder"),
    ('tokenizer = "no-model"', 'tokenizer = "no-model"', "load #1.tokenizer: "),
    ('\n[[load]]\nname = "two"\nendpoints = ["ref"]\nbatch = [0]', "batch = [0]", "load #2: --batch '0'"),
    ('\n[datasets.e]\npath = "missing"', 'path = "missing"', "datasets.e.path: "),
    (
        '\n[datasets.e]\npath = "data"\nmax_queries = 0',
        "max_queries = 0",
        "datasets.e.max_queries = 0: Input should be greater than or equal to 1",
    ),
    ('\n[datasets.e]\npath = "data"\nsplit = "train"', 'split = "train"', "split 'train' not found (available: test)"),
    (
        '\n[[quality]]\nname = "two"\ndataset = "d"\nmeasures = ["nope@3"]',
        'measures = ["nope@3"]',
        "quality #2: measure 'nope@3': unknown",
    ),
    (
        '\n[[quality]]\nname = "two"\ndataset = "d"\ndepth = 0',
        "depth = 0",
        "quality #2: --depth 0: expected a whole number from 1 to 100,000",
    ),
    (
        '\n[[quality]]\nname = "two"\ndataset = "d"\nmeasures = ["nDCG@10"]\ndepth = 5',
        "depth = 5",
        "quality #2: --depth 5 is below the deepest cut-off (10)",
    ),
    (
        '\n[[identity]]\nname = "two"\nendpoints = ["ref", "ref2"]\ntexts = "texts.txt"\nlimit = 0',
        "limit = 0",
        "identity #2.limit = 0: Input should be greater than or equal to 1",
    ),
    (
        '\n[[identity]]\nname = "two"\nendpoints = ["ref", "ref2"]\ntexts = "none.txt"',
        'texts = "none.txt"',
        "none.txt: no such file or folder",
    ),
    (
        '\n[[identity]]\nname = "two"\nendpoints = ["ref"]\ntexts = "texts.txt"',
        'endpoints = ["ref"]',
        "identity needs at least two endpoints of the same type",
    ),
    (
        '\n[[identity]]\nname = "two"\nendpoints = ["ref", "ref2"]\ntexts = "texts.txt"\ndtype = "fp7"',
        'dtype = "fp7"',
        "identity #2: dtype 'fp7': unknown",
    ),
    (
        '\n[[load]]\nname = "odd"\nendpoints = ["ref"]\nop = "sort"',
        'op = "sort"',
        "load #2: --op 'sort': expected embed or rerank",
    ),
    ('\n[suite]\nname = "../../x"', 'name = "../../x"', "suite.name '../../x' may hold only letters"),
]


@pytest.mark.parametrize("extra, line, words", BAD, ids=[b[0].strip().replace("\n", " ") for b in BAD])
def test_a_bad_value_anywhere_stops_the_suite_before_any_job_runs(folder, monkeypatch, capsys, extra, line, words):
    suite = folder / "suite.toml"
    text = SUITE + extra + "\n"
    suite.write_text(text)
    lines = text.splitlines()
    number = len(lines) - lines[::-1].index(line)  # the appended one, where a line of the same text is above it
    code, out, err = run_cli(["run", str(suite), "--out", str(folder / "out")], monkeypatch, capsys)
    assert (code, out) == (2, ""), out + err
    assert err.startswith(f"ragbench: error: {suite}:{number}: ") and words in err and err.count("\n") == 1, err
    assert not (folder / "out").exists()  # nothing ran
    assert not (folder.parent / "x").exists()


def test_overwrite_reaches_every_job_and_an_earlier_run_is_refused_before_anything_runs(
    folder, monkeypatch, capsys, load_server
):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    url, _ = load_server(service_ms=1)  # a TEI-shaped loopback server: identity and load without loading a model
    suite, out = folder / "suite.toml", folder / "out"
    suite.write_text(
        SUITE.replace('ref = "reference"\nref2 = "reference?batch=1"', f'ref = "tei@{url}"\nref2 = "tei@{url}?batch=1"')
    )
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out)], monkeypatch, capsys)
    assert code == 0, stdout + err
    files = sorted(out.rglob("results.jsonl"))
    assert [f.parent.name for f in files] == ["identity", "load", "quality-d"]
    before = [f.read_bytes() for f in files]
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "holds an earlier run" in err and "--overwrite" in err and err.count("\n") == 1, err
    assert "==" not in stdout  # refused before the first job started
    assert [f.read_bytes() for f in files] == before  # identity's too: nothing replaced
    code, stdout, err = run_cli(["run", str(suite), "--out", str(out), "--overwrite"], monkeypatch, capsys)
    assert code == 0, stdout + err
    for file, old in zip(files, before):
        assert file.read_bytes() != old and read_results(file).end.status == "complete"
