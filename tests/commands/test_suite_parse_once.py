"""A suite's [targets] and [endpoints] are parsed once, when the file is read, into the typed specs its entries'
checks take and its jobs run with (issue 49: the reader parsed each spec to check it, threw it away, and each
entry's check parsed it again)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.cli.suite.reader import load_suite
from bench.commands.identity import IdentityPlan
from bench.commands.load import LoadPlan
from bench.commands.quality import QualityPlan
from tests.harness.beir import write_beir

SUITE = """[datasets.d]
path = "data"

[targets]
bm25 = "bm25"

[endpoints]
ref = "reference"
ref2 = "reference?batch=1"

[[quality]]
dataset = "d"

[[identity]]
endpoints = ["ref", "ref2"]
texts = "texts.txt"

[[load]]
endpoints = ["ref"]
requests = 3
texts = "texts.txt"

[[load]]
name = "again"
endpoints = ["ref"]
requests = 3
texts = "texts.txt"
"""


def test_each_spec_of_a_suite_is_parsed_once_and_its_jobs_keep_the_plans(tmp_path: Path, monkeypatch):
    import bench.commands.specs as face

    write_beir(tmp_path / "data", {"d1": "cats purr"}, {"q1": "cats"}, [("q1", "d1", 1)])
    (tmp_path / "texts.txt").write_text("one\ntwo\n")
    (tmp_path / "suite.toml").write_text(SUITE)
    parsed: Counter[str] = Counter()
    for name in ("parse_target_spec", "parse_endpoint_spec"):
        real = getattr(face, name)
        monkeypatch.setattr(face, name, lambda text, real=real: parsed.update([text]) or real(text))

    suite = load_suite(tmp_path / "suite.toml")

    assert parsed == {"bm25=bm25": 1, "ref=reference": 1, "ref2=reference?batch=1": 1}
    assert [type(j.plan) for j in suite.jobs] == [QualityPlan, IdentityPlan, LoadPlan, LoadPlan]
    assert [j.names for j in suite.jobs] == [["bm25"], ["ref", "ref2"], ["ref"], ["ref"]]
    (load,) = [j.plan for j in suite.jobs if j.folder == "load-again"]
    assert isinstance(load, LoadPlan) and load.specs[0] is suite.jobs[2].plan.specs[0]  # one parsed spec, shared


@pytest.mark.parametrize("flag", ["--window", "--max-time"])
def test_load_interleave_parses_each_duration_once(flag: str, tmp_path: Path, monkeypatch):
    """--interleave's --window was parsed by its check and again for the sweep; --max-time by the CLI's check and
    again by the command. The CLI now checks once and hands the plan on."""
    from bench.commands import load as load_module
    from bench.commands.load import check_load
    from bench.commands.load_request import LoadRequest

    seen: Counter[str] = Counter()
    real = load_module.v.duration
    monkeypatch.setattr(load_module.v, "duration", lambda f, *a: seen.update([f]) or real(f, *a))
    request = LoadRequest(["a=reference", "b=reference"], tmp_path, interleave=True, max_time="1m")
    plan = check_load(request)
    assert seen[flag] == 1
    assert plan.max_time_s == 60.0 and plan.slices == 1 and plan.sweep.base.duration_s == 2.0
