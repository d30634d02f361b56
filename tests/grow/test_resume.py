"""What a --resume may continue (the ladder's options named when they differ, one engine per name, records checked
against the ladder), and the rung's console line."""

from __future__ import annotations

import pytest

from bench.grow.resume import engine_difference, ladder_difference, rung_problem
from bench.grow.session import _say
from bench.results.schema import GrowLadder
from bench.targets.base import TargetSpec
from tests.grow.test_answer import _rung

LADDER = GrowLadder(rungs=[1000, 2000, 4000], unit="docs", distractors="synthetic:0", queries=20, seed=0, slo=None)


def test_the_options_that_differ_are_named_by_their_flags_briefly():
    source = {"source": "synthetic:0", "kind": "synthetic", "vocabulary": 9000, "made": "x" * 300}
    old, new = LADDER | GrowLadder(distractor_source=source), LADDER | GrowLadder(distractor_source=dict(source))
    assert ladder_difference(old, new) is None
    said = ladder_difference(old, new | GrowLadder(rungs=[1000, 3000], queries=10))
    assert said == "--rungs 1,000,2,000,4,000 there, 1,000,3,000 now; --queries 20 there, 10 now"
    assert ladder_difference(old, new | GrowLadder(distractor_source=source | {"vocabulary": 1})) == (
        "the --distractors source's documents changed"
    )


def test_another_engine_under_a_name_is_found_in_the_header_or_else_in_the_records():
    specs = [TargetSpec("e=openwebui:hybrid@http://x", "openwebui", variant="hybrid", given_name="e")]
    assert engine_difference(LADDER | GrowLadder(engines={"e": "openwebui:vector"}), [], specs) == (
        "target e was openwebui:vector there, openwebui:hybrid now (another engine under the same name)"
    )
    assert engine_difference(LADDER | GrowLadder(engines={"e": "openwebui:hybrid"}), [], specs) is None
    old_run = [_rung(1, 1000, 10.0, 0.5)]
    old_run[0].target, old_run[0].kind = "e", "bm25"  # a run written before the header held its engines
    assert "target e was bm25 there, openwebui now" in (engine_difference(LADDER, old_run, specs) or "")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"rung": 99}, "rung 99 is not one of the ladder's 3"),
        ({"rung": 0}, "rung 0 is not one of"),
        ({"size": 1500}, "size 1,500 is not rung 1's 1,000"),
        ({"metrics": {"nDCG@10": 7.5}}, "nDCG@10 7.5 is outside 0 to 1"),
        ({"latency_ms": {"p50": float("nan")}}, "latency p50 nan is no count or time"),
        ({"ingest_seconds": -2.0}, "ingest_seconds -2.0 is no count or time"),
        ({"docs_per_s": float("inf")}, "docs_per_s inf is no rate"),
        ({"unit": "chunks"}, "its unit chunks is not the ladder's docs"),
    ],
)
def test_a_record_this_ladder_could_not_have_written_is_named(change, said):
    record = _rung(1, 1000, 10.0, 0.5)
    assert rung_problem(record, LADDER) is None
    for key, value in change.items():
        setattr(record, key, value)
    assert rung_problem(record, LADDER) == said or said in (rung_problem(record, LADDER) or "")


def test_the_rung_line_gives_docs_per_s_to_three_figures(capsys):
    """ "1 docs/s" for 1.4 before (an integer)."""
    record = _rung(1, 1000, 10.0, 0.5)
    record.docs_per_s = 1.4
    _say(record, 3)
    assert "(1.4 docs/s)" in capsys.readouterr().err
