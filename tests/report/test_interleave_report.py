"""The report of an interleaved run: the verdict first, the paired interval and smallest step, the rounds plot,
then the windows' load report."""

from __future__ import annotations

from bench.report import write_report
from tests.gate.helpers import interleaved_run


def test_the_verdict_comes_first_then_the_rounds_then_the_windows(tmp_path):
    run = interleaved_run(tmp_path / "run", 0.9)
    html = write_report(run)
    md = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    verdict, figures, windows = md.index("Verdict: **NOT GATED**"), md.index("| texts/s | ×0."), md.index("### Points")
    assert verdict < figures < windows
    assert "Rounds over time" in md and "Hodges-Lehmann estimate of the rounds' ratios" in md
    assert "ratio B ÷ A [95% interval] | pairs |" in md and "| 10 rounds |" in md  # whole windows: a pair a round
    assert list((tmp_path / "run" / "plots").glob("load_interleave_1_*.png"))
    assert "Verdict: <b>NOT GATED</b>" in html.read_text(encoding="utf-8")
    assert "one whole window per side" in md and "slices alternated" not in md  # a header without `slices`


def test_a_sliced_run_says_its_grain(tmp_path):
    from bench.results.store import read_results
    from bench.results.writer import ResultsWriter

    run = interleaved_run(tmp_path / "run", 0.9)
    records = read_results(run)
    sliced = tmp_path / "sliced"
    sliced.mkdir()
    header = records.header
    header.load = {**(header.load or {}), "interleave": True, "slices": 4}
    writer = ResultsWriter(sliced / "results.jsonl")
    writer.write(header, *records.load_points, *records.interleaved)
    writer.close()
    write_report(sliced / "results.jsonl")
    md = (sliced / "report.md").read_text(encoding="utf-8")
    assert "each side's window in 4 slices alternated with the other side's (X Y Y X …)" in md


def test_a_run_stopped_before_two_rounds_says_why_it_has_no_paired_record(tmp_path):
    """Ctrl-C in round 1: each side has one window, no `interleaved` record; the report (and load's output,
    the same lines) says the rounds done and how the run ended, not only the windows."""
    from bench.load.interleave import missing_pairs
    from bench.results.schema import EndRecord, EndStatus
    from bench.results.store import read_results
    from bench.results.writer import ResultsWriter
    from tests.gate.helpers import load_point
    from tests.harness.records import run_header

    folder = tmp_path / "cut"
    folder.mkdir()
    endpoints = {name: {"kind": "tei", "url": "http://127.0.0.1:9", "options": {}} for name in "ab"}
    writer = ResultsWriter(folder / "results.jsonl")
    header = run_header("load", targets=["a", "b"], load={"interleave": True, "rounds": 10, "endpoints": endpoints})
    end = EndRecord(EndStatus.INTERRUPTED, "2026-12-05T00:00:00Z", "interrupted by Ctrl-C")
    writer.write(header, load_point("a"), load_point("b"), end)
    writer.close()

    (line,) = missing_pairs(read_results(folder / "results.jsonl"))
    assert line.startswith("No paired record for closed batch 8 conc 4: 1 round(s) measured on both sides")
    assert "the run ended interrupted: interrupted by Ctrl-C; a paired ratio needs 2" in line
    write_report(folder / "results.jsonl")
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert md.index("No paired record for closed batch 8 conc 4") < md.index("### Points")


def test_a_run_that_is_not_interleaved_has_no_such_line(tmp_path):
    from bench.load.interleave import missing_pairs
    from bench.results.store import read_results
    from tests.gate.helpers import load_point, write_load_results

    (tmp_path / "plain").mkdir()
    assert missing_pairs(read_results(write_load_results(tmp_path / "plain", [load_point("a")]))) == []
