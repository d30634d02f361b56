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
    assert "Rounds over time" in md and "geometric mean of the rounds' ratios" in md
    assert list((tmp_path / "run" / "plots").glob("load_interleave_1_*.png"))
    assert "Verdict: <b>NOT GATED</b>" in html.read_text(encoding="utf-8")
